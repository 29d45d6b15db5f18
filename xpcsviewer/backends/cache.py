"""Where the persistent JAX compilation cache lives (no JAX import here)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

__all__ = ["compilation_cache_dir", "configure_compilation_cache", "user_cache_dir"]


def user_cache_dir() -> Path:
    """The user's cache folder for this app (XDG on Linux, the OS's elsewhere)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "xpcsviewer"


def compilation_cache_dir() -> Path | None:
    """Folder of the JAX compilation cache; ``XPCS_JAX_CACHE_DIR=off`` disables it."""
    value = os.environ.get("XPCS_JAX_CACHE_DIR")
    if value is not None:
        if value.strip().lower() in {"", "off", "none", "0", "false"}:
            return None
        return Path(value).expanduser()
    return user_cache_dir() / "jax-compilation-cache"


def configure_compilation_cache() -> Path | None:
    """Point JAX's persistent cache at our folder, so a second start does not recompile."""
    import jax

    path = compilation_cache_dir()
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        logger.warning("JAX compilation cache disabled: cannot create %s (%s)", path, exc)
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Cache everything that took noticeable time; small kernels recompile fast anyway.
    min_s = float(os.environ.get("XPCS_JAX_CACHE_MIN_COMPILE_S", "0.2"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", min_s)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
