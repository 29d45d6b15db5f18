"""One reader for the app's own small JSON files (device profile, kernel record, session).

Such a file may be anything a crash, a hand edit or another version left behind: a
missing file is no file, and anything but a readable JSON object (a list, ``null``, a
string, text nested thousands deep, a file too large for what it should hold) is ignored
with a warning naming the file, so that no command stops over it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["MAX_BYTES", "read_json_object"]

#: our small files are a few kB; more is not one of them (and is not read whole)
MAX_BYTES = 4 << 20


def read_json_object(path: str | os.PathLike, what: str) -> tuple[dict[str, Any] | None,
                                                                  str | None]:
    """``(object, None)``, ``(None, None)`` when there is no file, or ``(None, why)``:
    the warning (also logged) naming ``what`` and the file."""
    p = Path(path)
    try:
        if not os.path.lexists(p):
            return None, None
        data = json.loads(_text(p))
    except RecursionError:
        return None, _warn(what, p, "nested too deeply")
    except Exception as exc:  # ValueError, OSError, UnicodeError, MemoryError ...
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return None, _warn(what, p, why)
    if not isinstance(data, dict):
        return None, _warn(what, p, f"expected a JSON object, found {_kind(data)}")
    return data, None


def _text(path: Path) -> str:
    """The file's text; refuses what is not a regular file (opened without blocking: a
    FIFO in its place would hang a plain open) or more than our files hold."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > MAX_BYTES:
            raise ValueError(f"{st.st_size} bytes, more than this file holds ({MAX_BYTES})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    return raw.decode("utf-8")


def _kind(data: Any) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "true/false",
            int: "a number", float: "a number"}.get(type(data), type(data).__name__)


def _warn(what: str, path: Path, why: str) -> str:
    msg = f"Ignored the {what} {path}: {why}"
    logger.warning(msg)
    return msg
