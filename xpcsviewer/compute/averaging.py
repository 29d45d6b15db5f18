"""Statistics of averaging repeated measurements (NumPy float64, Qt-free, no files).

* **baseline**: mean of the last ``window`` valid g2 delays of one q-bin
  (:func:`baseline_value`);
* **robust z-score** ``(x - median(x)) / (1.4826 MAD(x))`` (:func:`robust_z`);
* streaming per-point means with their errors (:class:`PointAccumulator`), by
  ``error_method``:

  * ``"weighted"``: inverse-variance weighted mean ``sum(g/s^2) / sum(1/s^2)`` with
    error ``1 / sqrt(sum(1/s^2))``. Points whose error is zero or not finite carry no
    weight and are left out.
  * ``"sem"``: unweighted mean with the standard error across files
    ``std(g, ddof=1) / sqrt(n)``. Where only one file has a valid point, its own
    error is kept (the spread of one value is undefined).

  Invalid points are left out per point, never averaged as zeros.

The file-level job (screening and averaging of result files, the output file) is
:mod:`xpcsviewer.jobs.average`.
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = [
    "MAD_SCALE",
    "ErrorMethod",
    "MeanAccumulator",
    "PointAccumulator",
    "baseline_value",
    "robust_z",
]

#: 1.4826 * MAD estimates the standard deviation of normally distributed data.
MAD_SCALE = 1.4826


class ErrorMethod(enum.StrEnum):
    """How the errors of the averaged g2 are computed (see the module docstring)."""

    WEIGHTED = "weighted"
    SEM = "sem"


# ------------------------------------------------------------------ statistics
def baseline_value(
    g2: np.ndarray, valid: np.ndarray, q_index: int, window: int
) -> float:
    """Mean of the last ``window`` valid g2 values of column ``q_index``.

    Parameters
    ----------
    g2, valid : (T, Nd) float64 / bool
    q_index : int
        0-based column.
    window : int
        Number of last delays (clamped to T).

    Returns
    -------
    float
        NaN when no point in the window is valid.
    """
    g2 = np.asarray(g2, dtype=np.float64)
    if not 0 <= q_index < g2.shape[1]:
        raise ValueError(
            f"baseline q index {q_index} out of range 0..{g2.shape[1] - 1}"
        )
    w = max(1, min(int(window), g2.shape[0]))
    col = g2[-w:, q_index]
    ok = np.asarray(valid, bool)[-w:, q_index] & np.isfinite(col)
    return float(col[ok].mean()) if ok.any() else float("nan")


def robust_z(values: np.ndarray, *, one_sided: bool = False) -> np.ndarray:
    """Robust z-scores ``(v - median) / (1.4826 MAD)`` over the finite values.

    A zero MAD (e.g. identical files) is replaced by a tiny scale relative to the
    median, so that equal values score 0 and any real deviation scores huge.

    Parameters
    ----------
    values : (N,) float64
    one_sided : bool
        Return the signed score (large positive = worse) instead of ``|z|``.

    Returns
    -------
    (N,) float64
        NaN where the input is NaN.
    """
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    out = np.full(v.shape, np.nan)
    if not ok.any():
        return out
    med = np.median(v[ok])
    mad = np.median(np.abs(v[ok] - med))
    scale = MAD_SCALE * mad
    floor = 1e-12 * max(abs(med), np.max(np.abs(v[ok])), np.finfo(float).tiny)
    scale = max(scale, floor)
    z = (v[ok] - med) / scale
    out[ok] = z if one_sided else np.abs(z)
    return out


class PointAccumulator:
    """Streaming per-point mean and error of arrays with per-point validity.

    Parameters
    ----------
    shape : tuple of int
        Shape of each added array.
    method : ErrorMethod or str

    Notes
    -----
    ``"weighted"`` keeps ``sum(w)`` and ``sum(w x)`` with ``w = 1/err^2``;
    ``"sem"`` uses Welford's update of the mean and of the sum of squared
    deviations (stable for many files with nearly equal values).
    """

    def __init__(self, shape: tuple[int, ...], method: ErrorMethod | str) -> None:
        self.method = ErrorMethod(method)
        self.shape = tuple(shape)
        self.n = np.zeros(shape, dtype=np.int64)
        self.a = np.zeros(shape)  # sum(w) | running mean
        self.b = np.zeros(shape)  # sum(w x) | sum of squared deviations
        self.single_err = np.zeros(shape)  # sem: error of the only file so far

    def add(
        self, x: np.ndarray, err: np.ndarray, valid: np.ndarray | None = None
    ) -> None:
        """Add one file's values ``x`` with errors ``err`` (invalid points skipped)."""
        x = np.asarray(x, dtype=np.float64)
        err = np.asarray(err, dtype=np.float64)
        if x.shape != self.shape or err.shape != self.shape:
            raise ValueError(f"shape {x.shape} / {err.shape}, expected {self.shape}")
        ok = (
            np.isfinite(x)
            if valid is None
            else (np.asarray(valid, bool) & np.isfinite(x))
        )
        if self.method is ErrorMethod.WEIGHTED:
            ok &= np.isfinite(err) & (err > 0)
            w = np.zeros(self.shape)
            w[ok] = 1.0 / err[ok] ** 2
            self.a += w
            self.b[ok] += w[ok] * x[ok]
            self.n += ok
        else:
            first = ok & (self.n == 0)
            self.single_err[first] = np.where(np.isfinite(err[first]), err[first], 0.0)
            self.n += ok
            delta = np.where(ok, x - self.a, 0.0)
            self.a[ok] += delta[ok] / self.n[ok]
            self.b[ok] += delta[ok] * (x[ok] - self.a[ok])

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, err, n)``; mean = err = 0 where no file contributed."""
        has = self.n > 0
        mean = np.zeros(self.shape)
        err = np.zeros(self.shape)
        if self.method is ErrorMethod.WEIGHTED:
            mean[has] = self.b[has] / self.a[has]
            err[has] = 1.0 / np.sqrt(self.a[has])
        else:
            mean[has] = self.a[has]
            many = self.n > 1
            err[many] = np.sqrt(self.b[many] / (self.n[many] - 1)) / np.sqrt(
                self.n[many]
            )
            one = self.n == 1
            err[one] = self.single_err[one]
        return mean, err, self.n.copy()


class MeanAccumulator:
    """Plain per-point mean over files, ignoring non-finite values."""

    def __init__(self) -> None:
        self.total: np.ndarray | None = None
        self.count: np.ndarray | None = None

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        if self.total is None:
            self.total = np.zeros(x.shape)
            self.count = np.zeros(x.shape, dtype=np.int64)
        elif x.shape != self.total.shape:
            raise ValueError(f"shape {x.shape}, expected {self.total.shape}")
        ok = np.isfinite(x)
        self.total[ok] += x[ok]
        self.count += ok

    def result(self) -> np.ndarray | None:
        if self.total is None:
            return None
        out = np.full(self.total.shape, np.nan)
        has = self.count > 0
        out[has] = self.total[has] / self.count[has]
        return out
