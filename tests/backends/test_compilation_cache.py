"""A second start reuses the persistent compilation cache instead of recompiling."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = """
from xpcsviewer.backends import get_backend
jb = get_backend("jax")
f = jb.jit(lambda x: jb.xp.cumsum(jb.xp.sin(x) ** 2) @ jb.xp.cos(x))
print(float(f(jb.xp.linspace(0.0, 1.0, 257))))
"""


def _run(cache_dir):
    env = {
        **os.environ,
        "XPCS_JAX_CACHE_DIR": str(cache_dir),
        "XPCS_JAX_CACHE_MIN_COMPILE_S": "0",
        "JAX_PLATFORMS": "cpu",
    }
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip().splitlines()[-1])


def _entries(cache_dir):
    return sorted(p.name for p in cache_dir.rglob("*") if p.is_file())


def test_second_start_hits_cache(tmp_path):
    cache = tmp_path / "cache"
    v1 = _run(cache)
    first = _entries(cache)
    assert first, "the first run must write compiled executables to the cache"
    v2 = _run(cache)
    assert v1 == v2
    assert _entries(cache) == first, "the second run must reuse, not add, cache entries"


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    from xpcsviewer.backends.cache import compilation_cache_dir

    monkeypatch.setenv("XPCS_JAX_CACHE_DIR", "off")
    assert compilation_cache_dir() is None
    monkeypatch.setenv("XPCS_JAX_CACHE_DIR", str(tmp_path))
    assert compilation_cache_dir() == tmp_path
