"""What a result file holds for each q-bin's effective q (issue 48,
:mod:`xpcsviewer.compute.effective_q`): its q-map, time-averaged image, multi-tau delays
and g2 errors. Reading only; the arithmetic is in ``compute``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["read_effective_q_inputs"]


def read_effective_q_inputs(path: str | os.PathLike, qmap: Any = None,
                            known: Callable[[tuple], bool] | None = None) -> dict[str, Any]:
    """``{"key", "qmap", "image", "delays", "g2_err"}`` of a result file (None for what
    it lacks; ``g2_err`` NaN at points fits leave out), or ``{"key", "error"}`` when it
    has no readable q-map. ``key`` (path, size, mtime) identifies the file's content;
    where ``known(key)`` (the caller holds what it made of this content) only
    ``{"key"}`` is returned and nothing is read."""
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.reader import read_result, read_saxs_2d

    p = Path(path)
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_size, st.st_mtime_ns, qmap is None)
    except OSError:
        key = None
    if key is not None and known is not None and known(key):
        return {"key": key}
    out: dict[str, Any] = {"key": key, "qmap": qmap, "image": None, "delays": None,
                           "g2_err": None}
    try:
        if qmap is None:
            res = read_result(p)
            out["qmap"] = res.qmap
            mt = res.multitau
            if mt is not None:
                out["delays"] = np.asarray(mt.tau, np.float64)
                out["g2_err"] = np.where(np.asarray(mt.fit_mask, bool),
                                         np.asarray(mt.g2_err, np.float64), np.nan)
    except (XpcsFileError, OSError, ValueError, KeyError) as exc:
        return {"key": None, "error": f"no q-map: {exc}"}
    try:
        out["image"] = read_saxs_2d(p)
    except (XpcsFileError, OSError, ValueError, KeyError):
        out["image"] = None
    return out
