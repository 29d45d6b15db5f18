"""What the correlate job reads besides the frames: the q-map, the times stored beside
dense frames, and which pixels a partition correlates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RAW_COUNT_TIME", "RAW_FRAME_TIME", "correlated", "load_qmap", "qmap_mask_dataset",
           "raw_times"]

RAW_FRAME_TIME = "/entry/instrument/detector_1/frame_time"
RAW_COUNT_TIME = "/entry/instrument/detector_1/count_time"


def load_qmap(path: str | Path) -> Any:
    """QMap from a partition file (``/qmap``) or a result file (``/xpcs/qmap``)."""
    from xpcsviewer.io.results.reader import read_qmap

    return read_qmap(path)


def raw_times(path: Path) -> tuple[float | None, float | None]:
    """frame_time / count_time stored beside HDF5 raw frames, if any.

    Raises
    ------
    XpcsFileError
        A stored time that is not a positive finite number (names the dataset).
    """
    from xpcsviewer.io.raw import file_kind

    if file_kind(path) != "hdf5":
        return None, None
    from xpcsviewer.io._h5 import _number, open_h5

    with open_h5(path) as f:
        return (
            _number(f, RAW_FRAME_TIME, required=False, positive=True),
            _number(f, RAW_COUNT_TIME, required=False, positive=True),
        )


def qmap_mask_dataset(path: str | Path) -> str:
    """The mask dataset of a partition file (``/qmap``) or result file (``/xpcs/qmap``)."""
    import h5py

    try:
        from xpcsviewer.io._h5links import pointers_ok

        with h5py.File(path, "r", locking=False) as f:  # a link to a FIFO: no lookup
            if pointers_ok(f) and "qmap" not in f and "xpcs/qmap" in f:
                return "/xpcs/qmap/mask"
    except (OSError, ValueError):
        pass
    return "/qmap/mask"


def correlated(qm: Any) -> np.ndarray:
    """(H, W) bool: the pixels a correlation with this partition uses."""
    return ((np.asarray(qm.mask) > 0) & (np.asarray(qm.dynamic_roi_map) > 0)
            & (np.asarray(qm.static_roi_map) > 0))
