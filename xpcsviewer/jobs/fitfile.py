"""Fit result files exactly as ``xpcsviewer fit`` does.

The live job, the series view and ``xpcsviewer series`` call the job behind the
``fit`` command (:func:`xpcsviewer.jobs.fit.fit_files`) rather than a copy of it, so
they get its statuses, its model choice and whatever it learns later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FitOutcome", "fit_result_files", "record_bins", "record_curve"]


class FitOutcome:
    """One file's fit: ``record`` (the ``fit -o x.json`` record) or ``error``."""

    __slots__ = ("error", "path", "record")

    def __init__(self, path: str, record: dict[str, Any] | None, error: str | None) -> None:
        self.path = path
        self.record = record
        self.error = error

    @property
    def ok(self) -> bool:
        return self.record is not None


def fit_result_files(paths: Sequence[str], model: str = "auto",
                     q_range: tuple[float, float] | None = None,
                     t_range: tuple[float, float] | None = None,
                     progress: Any = None, cancel: Any = None) -> list[FitOutcome]:
    """Fit ``paths`` with the ``fit`` command's entry point; one outcome per path.
    ``cancel`` stops the fit at its next check (``Cancelled`` is raised)."""
    from xpcsviewer.jobs.fit import FitOptions, fit_files

    opts = FitOptions(model=model, q_range=q_range, t_range=t_range)
    items = [{"path": str(p), "shown": str(p)} for p in paths]
    outs = fit_files(opts, items, progress=progress, cancel=cancel)
    return [FitOutcome(str(p), o.value if o.ok else None, None if o.ok else str(o.error))
            for p, o in zip(paths, outs, strict=True)]


def _tau_key(rec: dict[str, Any]) -> str:
    return "tau" if "tau" in rec else "tau1"


def _entry(rec: dict[str, Any], name: str, i: int) -> tuple[float | None, float | None]:
    e = rec.get(name)
    if not isinstance(e, dict):
        return None, None
    v, err = e.get("value", [None] * (i + 1))[i], e.get("error", [None] * (i + 1))[i]
    return v, err


def record_bins(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Per q-bin: bin, q, phi, status, tau and contrast with errors (None when not
    reported), the one-sided tau limits, and the model of the bin."""
    out = []
    tk = _tau_key(rec)
    n = len(rec.get("q", []))
    bins = rec.get("bins") or list(range(1, n + 1))
    models = rec.get("models") if isinstance(rec.get("models"), list) else None
    for i in range(n):
        tau, tau_err = _entry(rec, tk, i)
        c, c_err = _entry(rec, "contrast", i)
        out.append({
            "bin": int(bins[i]), "q": rec["q"][i], "phi": rec["phi"][i],
            "status": rec["status"][i], "tau_s": tau, "tau_err_s": tau_err,
            "contrast": c, "contrast_err": c_err,
            "tau_lower_limit_s": rec.get("tau_lower_limit", [None] * n)[i],
            "tau_upper_limit_s": rec.get("tau_upper_limit", [None] * n)[i],
            "model": models[i] if models else rec.get("model"),
        })
    return out


def record_curve(rec: dict[str, Any], i: int, t: Any) -> Any | None:
    """The fitted g2 of bin ``i`` at delays ``t``, or None when the record does not
    report every parameter of the bin's model (e.g. an unresolved tau)."""
    import numpy as np

    from xpcsviewer.fitting.models import evaluate_model, model_param_names

    models = rec.get("models") if isinstance(rec.get("models"), list) else None
    model = models[i] if models else rec.get("model")
    try:
        names = model_param_names(model)
    except (KeyError, ValueError):
        return None
    if "m" in names or model == "single_avgcorr":
        return None
    vals = []
    for n in names:
        v, _ = _entry(rec, n, i)
        if v is None:
            return None
        vals.append(float(v))
    return evaluate_model(model, np.asarray(t, dtype=np.float64), tuple(vals))
