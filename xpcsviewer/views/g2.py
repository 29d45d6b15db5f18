"""View data of the g2, Diffusion and Two-Time tabs and their figures (NumPy, no Qt/JAX).

The GUI tabs and the exported figures both call these functions, so the screen and
the publication figure show the same numbers.

Units: tau and t in s, q in 1/Angstrom, Gamma in 1/s, D in Angstrom^2/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.fitting.blocks import G2Block
from xpcsviewer.fitting.fit_table import G2Fits

__all__ = [
    "PHI_TOL_DEG",
    "Q_TOL",
    "DiffusionPoints",
    "G2Panel",
    "c2_time_axis",
    "delay_seconds",
    "diffusion_points",
    "g2_data_columns",
    "g2_panels",
    "g2_points",
    "robust_ylim",
    "twotime_g2_curves",
]


#: Bins of different files share a q panel when their q agree within this fraction
#: (and their phi within PHI_TOL_DEG); closer bins of one file never share a panel.
Q_TOL = 0.02
PHI_TOL_DEG = 1.0


@dataclass(frozen=True)
class G2Panel:
    """One panel of the g2 view: its title and its curves.

    Attributes
    ----------
    title : str
    members : list of (block index, column j)
    labels : list of str
        Each curve's legend text (its file, bin or both; its own q where the panel's
        bins differ in q).
    mixed_q : bool
        The members' q values differ (within the tolerance).
    """

    title: str
    members: list[tuple[int, int]]
    labels: list[str]
    mixed_q: bool = False


def _q_text(q: float, phi: float | None = None) -> str:
    t = f"q={q:.5g} \u00c5\u207b\u00b9"
    return t if phi is None else f"{t}, \u03c6={phi:.3g}\u00b0"


def g2_panels(
    blocks: list[G2Block], layout: str = "qbin", labels: dict[int, str] | None = None,
    q_tol: float = Q_TOL,
) -> tuple[list[G2Panel], str]:
    """The panels of the g2 view, grouped so that one title never covers two q values.

    ``qbin``: one panel per q (and phi): bins of different files are grouped by their
    q value within ``q_tol`` (relative) and phi within :data:`PHI_TOL_DEG`, not by bin
    number (files with different partitions would put different q under one title);
    where a panel's members differ in q, each curve is labelled with its own q.
    ``file``: one panel per file. ``combined``: one panel.

    Parameters
    ----------
    labels : dict file_index -> str, optional
        Short file labels (default: each block's label).

    Returns
    -------
    (panels, note)
        ``note`` says when the files have different partitions ("" otherwise).
    """
    def name(b: G2Block) -> str:
        return (labels or {}).get(b.file_index, b.label)

    if layout == "file":
        return [G2Panel(name(b), [(k, j) for j in range(b.n_bins)],
                        [b.bin_labels[j] for j in range(b.n_bins)])
                for k, b in enumerate(blocks)], ""
    if layout == "combined":
        mem = [(k, j) for k, b in enumerate(blocks) for j in range(b.n_bins)]
        return [G2Panel("all files", mem,
                        [f"{name(blocks[k])} {blocks[k].bin_labels[j]}" for k, j in mem])], ""
    if layout != "qbin":
        raise ValueError(f"layout must be 'qbin', 'file' or 'combined', got {layout!r}")
    items = sorted(
        ((float(b.phi[j]), float(b.q[j]), k, j) for k, b in enumerate(blocks)
         for j in range(b.n_bins)),
        key=lambda it: (round(it[0] / PHI_TOL_DEG), it[1]),
    )
    groups: list[list[tuple[float, float, int, int]]] = []
    for it in items:
        g = groups[-1] if groups else None
        if (g is not None and abs(it[0] - g[0][0]) <= PHI_TOL_DEG
                and it[1] <= g[0][1] * (1.0 + q_tol) and all(m[2] != it[2] for m in g)):
            g.append(it)
        else:
            groups.append([it])
    many_phi = len({round(it[0] / PHI_TOL_DEG) for it in items}) > 1
    panels = []
    mixed_any = False
    for g in groups:
        qs = np.array([m[1] for m in g])
        mixed = bool(qs.max() > qs.min() * (1.0 + 1e-6))
        mixed_any |= mixed
        phi = g[0][0] if many_phi else None
        title = ("q\u2248" + _q_text(float(np.mean(qs)), phi)[2:]) if mixed else _q_text(qs[0], phi)
        lab = [name(blocks[m[2]]) + (f" ({_q_text(m[1])})" if mixed else "") for m in g]
        panels.append(G2Panel(title, [(m[2], m[3]) for m in g], lab, mixed))
    parts = {tuple(np.round(b.q, 9)) for b in blocks}
    note = ""
    if len(parts) > 1:
        note = (f"the files have different q partitions: a panel holds the bins within "
                f"{100 * q_tol:g} % in q" + ("; curves show their own q" if mixed_any else ""))
    return panels, note


def g2_points(block: G2Block, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The drawable points of curve ``j`` of a block: (tau, g2, err), invalid removed."""
    ok = block.valid[:, j]
    return block.tau[ok], block.g2[ok, j], block.g2_err[ok, j]


def robust_ylim(values: list[np.ndarray], pad: float = 0.05) -> tuple[float, float] | None:
    """Y range for a g2 panel that isolated wild points cannot blow up.

    Real files hold isolated points far off the curve (g2 up to ~300 where a bin
    had no photons); a min/max range would flatten every curve. Points farther than
    a fence ``f = max(5 IQR, 3 (p95 - p5), 1)`` outside ``[p5, p95]`` are left out
    of the range (not of the data); the range is the min/max of the rest, widened
    by ``pad`` of its span on each side. None when nothing is finite.
    """
    v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values] or [np.zeros(0)])
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    p5, q1, q3, p95 = np.percentile(v, [5, 25, 75, 95])
    # A genuine g2 stays within ~1 of its baseline (contrast <= 1): a fence of at least
    # 1 never cuts a real curve, while the wild points sit tens to hundreds away.
    fence = max(5.0 * (q3 - q1), 3.0 * (p95 - p5), 1.0)
    keep = v[(v >= p5 - fence) & (v <= p95 + fence)]
    a, b = float(keep.min()), float(keep.max())
    span = b - a if b > a else max(abs(a) * 0.05, 1e-3)
    return a - pad * span, b + pad * span


def delay_seconds(seconds: np.ndarray) -> np.ndarray:
    """Delays in s rounded to 12 significant digits, for text outputs.

    ``delay_frames * t0`` carries the product's rounding (6 x 1e-5 is
    6.000000000000001e-05); at 12 digits it is the delay as stated (6e-05), far
    below any frame-time precision.
    """
    t = np.asarray(seconds, dtype=np.float64)
    return np.array([float(f"{x:.12g}") for x in t.ravel()]).reshape(t.shape)


def g2_data_columns(blocks: list[G2Block]) -> tuple[dict[str, np.ndarray], list[str]]:
    """CSV columns of the shown g2 data: per file ``tau`` and the integer delay, then
    g2 and err per bin.

    tau is ``delay_frames * t0`` from the integer lags (:func:`delay_seconds`).
    Invalid points are written as NaN.
    """
    cols: dict[str, np.ndarray] = {}
    header = ["g2 data: tau in s (= delay_frames x frame time); g2 and err dimensionless; "
              "invalid points are nan"]
    for b in blocks:
        frames = np.asarray(b.delay_frames, dtype=np.int64)
        cols[f"{b.label}:tau_s"] = delay_seconds(frames * float(b.t0))
        cols[f"{b.label}:delay_frames"] = frames
        for j in range(b.n_bins):
            name = f"{b.label}:bin{b.columns[j] + 1}"
            cols[f"{name}:g2"] = np.where(b.valid[:, j], b.g2[:, j], np.nan)
            cols[f"{name}:err"] = np.where(b.valid[:, j], b.g2_err[:, j], np.nan)
        header.append(
            f"{b.label}: "
            + "; ".join(
                f"bin{c + 1} = {lab}"
                for c, lab in zip(b.columns, b.bin_labels, strict=True)
            )
        )
    return cols, header


# -------------------------------------------------------------------- diffusion
@dataclass(frozen=True)
class DiffusionPoints:
    """tau (or Gamma) vs q of one file from converged fits.

    Attributes
    ----------
    file_index : int
    label : str
    q : (n,) float64
    y, y_err : (n,) float64
        tau (s) or Gamma = 1/tau (1/s).
    rows : (n,) int
        Rows in the ``G2Fits`` used.
    n_dropped : int
        Fits left out (not converged or non-finite).
    q_centre : (n,) float64 or None
        The bins' centres where ``q`` is their effective q (issue 48,
        :func:`xpcsviewer.views.diffusion.diffusion_analysis`); None: ``q`` is the centre.
    q_note : str
        Which q ``q`` is, in one line.
    """

    file_index: int
    label: str
    q: np.ndarray
    y: np.ndarray
    y_err: np.ndarray
    rows: np.ndarray
    n_dropped: int
    q_centre: np.ndarray | None = None
    q_note: str = ""


def diffusion_points(fits: G2Fits, quantity: str = "tau") -> list[DiffusionPoints]:
    """Per-file tau(q) or Gamma(q) from a fit; failed fits are dropped (counted).

    tau is each converged row's mean relaxation time (:meth:`G2Fits.relaxation_time`:
    tau of the single exponential, tau Gamma(1 + 1/stretch) of the stretched one,
    f tau1 + (1 - f) tau2 of the double one), so Gamma = 1/tau whichever model a row has.

    Parameters
    ----------
    fits : G2Fits
    quantity : {"tau", "gamma"}
        Gamma = 1/tau with error tau_err / tau^2.
    """
    if quantity not in ("tau", "gamma"):
        raise ValueError(f"quantity must be 'tau' or 'gamma', got {quantity!r}")
    t_all, te_all = fits.relaxation_time()
    out = []
    for fi in np.unique(fits.file_index):
        rows = fits.rows_of(int(fi))
        t = t_all[rows]
        te = te_all[rows]
        ok = fits.ok[rows] & np.isfinite(t) & (t > 0)
        r = rows[ok]
        tau, tau_err = t[ok], te[ok]
        if quantity == "gamma":
            y, ye = 1.0 / tau, tau_err / tau**2
        else:
            y, ye = tau, tau_err
        out.append(
            DiffusionPoints(
                int(fi),
                fits.file_labels[rows[0]],
                fits.q[r],
                y,
                ye,
                r,
                int((~ok).sum()),
            )
        )
    return out


# ---------------------------------------------------------------------- twotime
def c2_time_axis(n: int, t0: float) -> np.ndarray:
    """Times (s) of the rows/columns of an (n, n) C2 view whose step is ``t0``
    (already x stride)."""
    return np.arange(int(n), dtype=np.float64) * float(t0)


def twotime_g2_curves(
    twotime: Any, index: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """g2 from C2 stored in the file for processed bin ``index``.

    Returns
    -------
    (t_full (N-1,), g2_full (N-1,), t_seg (L-1,), g2_seg (5, L-1)) or None
        Delays k = 1.. times the per-analysis t0 (the k = 0 point is the shot-noise
        spike and is not drawn). None when the file stores no g2 from C2.
    """
    from xpcsviewer.backends import ensure_numpy

    if twotime is None or twotime.g2_full is None:
        return None
    full = np.asarray(ensure_numpy(twotime.g2_full), dtype=np.float64)
    if not 0 <= index < full.shape[0]:
        raise IndexError(f"processed bin index {index} outside 0..{full.shape[0] - 1}")
    g = full[index]
    t0 = float(twotime.t0)
    t_full = np.arange(1, g.size) * t0
    seg = None
    if twotime.g2_segments is not None:
        seg = np.asarray(ensure_numpy(twotime.g2_segments), dtype=np.float64)[index]
    if seg is None or seg.ndim != 2 or seg.shape[-1] < 2:
        return t_full, g[1:], np.zeros(0), np.zeros((0, 0))
    t_seg = np.arange(1, seg.shape[-1]) * t0
    return t_full, g[1:], t_seg, seg[:, 1:]
