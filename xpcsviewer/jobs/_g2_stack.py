"""The per-pixel G2 stack of a result file, read one delay at a time and checked for
what regrouping and the pixel audit rely on (issue 50): planes of the detector's
shape, finite values, IP and IF >= 0, with intensity at the first delay where the
q-map correlates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["STACK", "checked_stack_reader"]

STACK = "/xpcs/multitau/unnormalized_G2"


def checked_stack_reader(path: str | Path, shape: tuple[int, int], used: np.ndarray
                         ) -> Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``read(k) -> (G2, IP, IF)`` at delay index ``k``, each (H, W).

    ``used``: (H, W) bool, the pixels the file's q-map correlates.

    Raises (from ``read``)
    ------
    XpcsFileError
        A plane of another shape, NaN/Inf where a correlated pixel is, negative IP/IF,
        or at the first delay IP/IF zero over every correlated pixel (no intensity: no
        g2 can follow).
    """
    from xpcsviewer.io import read_g2_stack_delay
    from xpcsviewer.io.errors import XpcsFileError

    used = np.asarray(used, dtype=bool)
    h, w = shape

    def read(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        planes = read_g2_stack_delay(path, k)
        if planes[0].shape != tuple(shape):
            raise XpcsFileError(path, f"per-pixel plane of shape {planes[0].shape}",
                                dataset=STACK, expected=f"(T, 3, {h}, {w}): the q-map's "
                                "detector shape")
        for name, plane in zip(("G2", "IP", "IF"), planes, strict=True):
            vals = plane[used]
            if not np.isfinite(vals).all():
                r, c = (int(v[0]) for v in np.nonzero(used & ~np.isfinite(plane)))
                raise XpcsFileError(path, f"{name} is {float(plane[r, c])} at delay index {k}, "
                                    f"pixel ({r}, {c}), which the q-map correlates",
                                    dataset=STACK, expected="finite G2, IP, IF")
            # the first delay has the most pairs; the last may have none at all
            if name != "G2" and vals.size and (vals.min() < 0 or (k == 0 and not vals.any())):
                what = "negative" if vals.min() < 0 else "zero at every correlated pixel"
                raise XpcsFileError(path, f"{name} is {what} at delay index {k}",
                                    dataset=STACK,
                                    expected=f"{name} >= 0 with intensity in the q-bins")
        return planes

    return read
