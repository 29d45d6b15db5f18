"""Bayesian fits of many bins in small units: progress per bin, an estimate of the
time left, and a stop between units that keeps the bins already sampled (no Qt).

A file's NUTS run (:func:`~xpcsviewer.fitting.block_fits.fit_curves`) samples each
model's bins in chunks of :data:`~xpcsviewer.fitting.bayes_run.BIN_CHUNK`. A *unit* is
one such chunk, cut out of its file as a block of its own and given the seed the
chunk has in the whole-file run, so a bin's draws are those of the whole-file run
(bins sampled longer in the extension round aside: that round's length is set per
run). The bins the least squares finds nothing to sample in ride along with their
file's first unit (they cost no sampling).

:func:`plan` (least squares of every bin, then the units) and each unit run where
the caller's fits run (the fit process, or the caller's thread); :func:`place` and
:func:`keep_lsq` build the whole table in the caller from the units' tables.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from xpcsviewer.fitting.blocks import G2Block
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.fitting.spec import FitSpec

__all__ = ["CANCELLED_DETAIL", "Unit", "keep_lsq", "place", "plan", "sub_block"]

#: detail of the bins a stopped Bayesian fit left with their least-squares fit
CANCELLED_DETAIL = "not sampled: the Bayesian fit was stopped first"
#: the seed step between chunks of one run (``bayes_run._run_per_bin_chunks``)
_CHUNK_SEED = 7919


@dataclass(frozen=True, eq=False)
class Unit:
    """Bins ``cols`` (0-based positions in block ``block``) sampled together."""

    block: int
    cols: np.ndarray
    chunk: int  #: the chunk's index in its model's run (its seed)
    n_sampled: int  #: bins of ``cols`` NUTS samples (the others keep least squares)
    model: str

    @property
    def seed_offset(self) -> int:
        """Added to the run's seed: the chunk's seed in its whole-file run."""
        return _CHUNK_SEED * int(self.chunk)


def sub_block(b: G2Block, cols: np.ndarray) -> G2Block:
    """The curves ``cols`` of ``b`` as a block of their own (same file, same delays)."""
    cols = np.asarray(cols, np.int64)
    return replace(
        b, g2=b.g2[:, cols], g2_err=b.g2_err[:, cols], valid=b.valid[:, cols],
        columns=b.columns[cols], q=b.q[cols], phi=b.phi[cols],
        bin_labels=[b.bin_labels[j] for j in cols],
        excluded=None if b.excluded is None else b.excluded[:, cols],
        noise=None if b.noise is None else b.noise[:, :, cols])


def offsets(blocks: list[G2Block]) -> np.ndarray:
    """Row of each block's first curve in a table of ``blocks`` (and the total)."""
    return np.cumsum([0] + [b.n_bins for b in blocks]).astype(np.int64)


def plan(blocks: list[G2Block], fit: FitSpec, progress=None,
         cancel=None) -> tuple[G2Fits, list[Unit]]:
    """Least squares of every curve (the chains' start and the choice of what to
    sample) and the units of the Bayesian fit, file by file."""
    from xpcsviewer.fitting.bayes import MODEL_ORDER, to_sample
    from xpcsviewer.fitting.bayes_run import BIN_CHUNK
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.fit_table import lsq_start

    start = fit_curves(blocks, fit, progress=progress, cancel=cancel)
    off = offsets(blocks)
    units: list[Unit] = []
    for k in range(len(blocks)):
        init = lsq_start(start, np.arange(off[k], off[k + 1]))
        sampled = to_sample(init)
        models = init.model_names()
        first = len(units)
        for m in MODEL_ORDER:
            rows = np.flatnonzero(sampled & (models == m.value))
            for c in range(0, rows.size, BIN_CHUNK):
                sel = rows[c:c + BIN_CHUNK]
                units.append(Unit(k, sel, c // BIN_CHUNK, int(sel.size), m.value))
        rest = np.flatnonzero(~sampled)
        if rest.size and len(units) > first:
            u = units[first]
            units[first] = replace(u, cols=np.sort(np.concatenate([u.cols, rest])))
        elif rest.size:
            units.append(Unit(k, rest, 0, 0, ""))
    return start, units


def _per_curve(a: Any, n: int) -> str:
    if isinstance(a, np.ndarray) and a.ndim and a.shape[0] == n:
        return "array"
    if isinstance(a, list) and len(a) == n:
        return "list"
    if isinstance(a, dict) and a and all(isinstance(v, np.ndarray) and v.ndim
                                         and v.shape[0] == n for v in a.values()):
        return "dict"
    return ""


def place(out: G2Fits, rows: np.ndarray, part: G2Fits) -> None:
    """Put the table ``part`` (one unit) into rows ``rows`` of ``out``: every
    per-curve field, the posterior bands (and those already drawn)."""
    rows = np.asarray(rows, np.int64)
    n = part.n_curves
    for f in fields(part):
        if f.name in ("bands", "band_cache", "key_index", "solves", "fixed"):
            continue
        src, dst = getattr(part, f.name), getattr(out, f.name)
        kind = _per_curve(src, n)
        if not kind or dst is None:
            continue
        if kind == "array":
            dst[rows] = src
        elif kind == "list":
            for r, v in zip(rows, src, strict=True):
                dst[r] = v
        else:
            for key, v in src.items():
                if key not in dst:
                    dst[key] = np.full((out.n_curves, *v.shape[1:]), np.nan)
                dst[key][rows] = v
    out.fixed.update(part.fixed)
    base = len(out.bands)
    for fr, res in part.bands:
        out.bands.append((rows[np.asarray(fr, np.int64)], res))
    for (j, *grid), b in part.band_cache.items():
        out.band_cache[(base + j, *grid)] = b


def keep_lsq(out: G2Fits, rows: np.ndarray, start: G2Fits, detail: str) -> None:
    """Rows ``rows`` of the Bayesian table ``out`` with their least-squares fit from
    ``start`` (a table of the same curves, row for row), not sampled for ``detail``."""
    rows = np.asarray(rows, np.int64)
    if rows.size == 0:
        return
    for n in out.params:
        out.params[n][rows] = start.params[n][rows]
        out.errors[n][rows] = start.errors[n][rows]
    out.status[rows] = start.status[rows]
    out.status_lsq[rows] = start.status[rows]
    out.detail[rows] = detail
    out.chi2_red[rows] = start.chi2_red[rows]
    for k in ("tau_lower_limit", "tau_upper_limit", "limit_name", "delta_aicc", "models"):
        src, dst = getattr(start, k), getattr(out, k)
        if src is not None and dst is not None:
            dst[rows] = src[rows]
