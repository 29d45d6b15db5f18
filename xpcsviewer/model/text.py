"""Text of paths that can always be printed, written to HDF5 and drawn."""

from __future__ import annotations

import os

__all__ = ["display_path"]


def display_path(path: str | os.PathLike) -> str:
    """``path`` as printable text: bytes that are not UTF-8 become U+FFFD.

    File names are bytes on POSIX; Python keeps undecodable bytes as lone
    surrogates, which cannot be printed, written to HDF5 or drawn by matplotlib.
    """
    s = os.fspath(path)
    if isinstance(s, bytes):
        return s.decode("utf-8", errors="replace")
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return os.fsencode(s).decode("utf-8", errors="replace")
