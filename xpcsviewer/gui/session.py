"""Session and recent-folder persistence (JSON in the user's config folder).

Nothing here imports Qt, so it is easy to test. A corrupt or unreadable file is
ignored with a warning (never a crash); writes are atomic.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from xpcsviewer.export.files import atomic_write

__all__ = ["MAX_RECENT", "SESSION_VERSION", "add_recent", "config_dir",
           "drawn_mask_path", "load_session", "save_session", "session_path"]

logger = logging.getLogger(__name__)

SESSION_VERSION = 1
MAX_RECENT = 10


def config_dir() -> Path:
    """The folder for settings: ``XPCSVIEWER_CONFIG_DIR`` or the platform's config folder."""
    env = os.environ.get("XPCSVIEWER_CONFIG_DIR")
    if env:
        return Path(env)
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "xpcsviewer"


def session_path() -> Path:
    """``<config_dir>/session.json``."""
    return config_dir() / "session.json"


def drawn_mask_path(source: str | os.PathLike) -> Path:
    """Where the mask drawn on the result file ``source`` is kept between sessions:
    ``<config_dir>/masks/<stem>_<hash of the full path>.hdf``."""
    import hashlib

    source = str(Path(source).resolve())
    digest = hashlib.sha1(source.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return config_dir() / "masks" / f"{Path(source).stem[:60]}_{digest}.hdf"


def load_session(path: Path | None = None) -> tuple[dict[str, Any], str | None]:
    """Read the session file; never raises.

    Whatever a hostile or broken file makes the parser raise (deep nesting:
    RecursionError; a 5000-digit number: ValueError; a folder or FIFO in its
    place) is turned into a warning naming the file.

    Returns
    -------
    session : dict
        Empty when the file is missing or unusable.
    warning : str or None
        Why the file was ignored (corrupt, wrong type), for the status bar.
    """
    from xpcsviewer.backends.json_file import read_json_object

    path = Path(path) if path is not None else session_path()
    data, msg = read_json_object(path, "session file")
    if data is None:
        return {}, msg
    bad = [k for k, types in ENTRY_TYPES.items()
           if k in data and (not isinstance(data[k], types)
                             or (isinstance(data[k], bool) and bool not in types))]
    if bad:
        msg = (f"Ignored entries of the wrong type in the session file {path}: "
               + ", ".join(f"{k} (expected {_type_words(ENTRY_TYPES[k])})" for k in bad))
        logger.warning(msg)
        return {k: v for k, v in data.items() if k not in bad}, msg
    return data, None


#: What each entry of a session holds (``MainWindow.session_dict``).
ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    "folder": (str, type(None)), "targets": (list,), "current_target": (int,),
    "active_tab": (str, type(None)), "geometry": (str,), "window_state": (str,),
    "theme": (str,), "panels": (dict,), "recent_folders": (list,), "browser": (dict,),
}


def _type_words(types: tuple[type, ...]) -> str:
    names = {str: "text", list: "a list", dict: "an object", int: "an integer",
             type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def save_session(data: dict[str, Any], path: Path | None = None) -> Path:
    """Write the session atomically (temp file in the same folder, then rename)."""
    path = Path(path) if path is not None else session_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dict(data)
    data["version"] = SESSION_VERSION
    text = json.dumps(data, indent=2, default=str)
    return atomic_write(path, lambda fh: fh.write(text), binary=False)


def add_recent(recent: list[str], folder: str | os.PathLike, limit: int = MAX_RECENT) -> list[str]:
    """``folder`` first, without duplicates, at most ``limit`` entries."""
    folder = str(Path(folder))
    out = [folder] + [r for r in recent if isinstance(r, str) and r != folder]
    return out[:limit]
