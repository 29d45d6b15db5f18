"""Diffusion tab: the worker job (power law per file, verdict, D, radius) and its result.

Qt-free, like every job function: it runs in a worker and hands plain data to the tab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.fitting.blocks import g2_blocks
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.views.diffusion import diffusion_analysis
from xpcsviewer.views.g2 import DiffusionPoints

__all__ = ["DiffusionFile", "diffusion_job"]


@dataclass
class DiffusionFile:
    """Everything the tab shows for one file."""

    file_index: int
    label: str
    points: DiffusionPoints
    power: Any  # DiffusionResult drawn (free, or the user's fixed exponent) or None
    joint: Any  # JointDiffusionResult or None
    radius: tuple[float, float]  # nm
    radius_source: str
    verdict: Any = None  # DiffusionVerdict

    @property
    def D(self) -> float:  # physics symbol
        """D (A^2/s) when diffusive, else NaN."""
        return self.verdict.D if self.verdict is not None else math.nan

    @property
    def D_err(self) -> float:
        """Error of D, NaN unless diffusive."""
        return self.verdict.D_err if self.verdict is not None else math.nan


def _solvent(opts: dict, res: Any) -> tuple[float, float, str] | None:
    from xpcsviewer.fitting import solvent_from_sample, water_viscosity

    src = opts.get("solvent", "file")
    t = opts.get("temperature_K")
    if src == "water" and t is not None:
        try:
            return float(t), water_viscosity(float(t)), "water at T"
        except ValueError:
            return None
    if src == "given" and t is not None and opts.get("viscosity_Pa_s"):
        return float(t), float(opts["viscosity_Pa_s"]), "given \u03b7"
    if src == "file" and res is not None:
        stated = solvent_from_sample(getattr(res, "sample", {}), getattr(res, "sample_units", {}))
        if stated is not None:
            return stated[0], stated[1], "file"
    return None


def diffusion_job(
    fits: G2Fits, results: list, opts: dict, progress=None, cancel=None
):
    """Worker job: points, verdicts, power laws, joint fits and radii per file.

    ``opts``: quantity, qmin, qmax, exponent (None = fitted; a value draws that fixed
    power law), joint (bool), solvent ("file" | "water" | "given"), temperature_K,
    viscosity_Pa_s.
    """
    from xpcsviewer.fitting import fit_diffusion_joint, hydrodynamic_radius
    from xpcsviewer.progress import report

    qmin, qmax = opts.get("qmin"), opts.get("qmax")
    # the power laws and verdicts as the exported figure draws them
    analysis = diffusion_analysis(fits, opts.get("quantity", "tau"), qmin, qmax,
                                  opts.get("exponent"))
    laws = analysis.laws if analysis is not None else ()
    q_range = analysis.q_range if analysis is not None else None
    by_label = {r.label: r for r in results}
    by_path = {str(getattr(r, "path", "")): r for r in results}
    out = []
    for k, law in enumerate(laws):
        pts, verdict, power = law.points, law.verdict, law.power
        report(progress, cancel, k, len(laws), f"diffusion fit {pts.label}")
        joint = None
        # The fits may come from another target list: find the file by its path.
        src = fits.sources[int(fits.rows_of(pts.file_index)[0])]
        res = by_path.get(src) if src else by_label.get(pts.label)
        if opts.get("joint") and res is not None and verdict.diffusive:
            blocks = g2_blocks([res], qmin, qmax)
            if blocks:
                b = blocks[0]
                rows = fits.rows_of(pts.file_index)
                good = {int(fits.columns[r]) for r in rows if fits.ok[r]}
                bins = np.array([int(c) in good for c in b.columns])
                # diffusive: alpha = 2, so the joint D is in A^2/s like the verdict's
                joint = fit_diffusion_joint(
                    b.q, b.tau, b.g2.T, b.g2_err.T, b.fit_valid.T,
                    q_range=q_range, t_range=fits.t_range, alpha=2.0, bins=bins,
                )
        radius, src = (math.nan, math.nan), ""
        if verdict.diffusive:
            solvent = _solvent(opts, res)
            if solvent is not None:
                t_k, eta, src = solvent
                radius = hydrodynamic_radius(
                    verdict.D, t_k, eta,
                    D_err=verdict.D_err if math.isfinite(verdict.D_err) else 0.0,
                )
            else:
                src = "no solvent stated"
        out.append(
            DiffusionFile(pts.file_index, pts.label, pts, power, joint, radius, src, verdict)
        )
    report(progress, cancel, len(laws), len(laws), "done")
    return out


def _pm(v: float, e: float, fmt: str = ".4g") -> str:
    if v is None or not math.isfinite(v):
        return "\u2014"
    if e is not None and math.isfinite(e) and e > 0:
        return f"{v:{fmt}} \u00b1 {e:.2g}"
    return f"{v:{fmt}}"
