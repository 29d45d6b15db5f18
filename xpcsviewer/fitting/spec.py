"""What a fit is asked to do, as frozen values (no Qt, no JAX).

A fit of g2 curves is one :class:`FitSpec` (model, parameter settings, delay window)
and, for a Bayesian fit, one :class:`SamplerSpec` (NUTS settings). The GUI, the command
line, live and series build them once and hand them to
:func:`xpcsviewer.fitting.block_fits.fit_curves`, so a setting is spelled in one place
and travels as one value instead of as twenty keyword arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["FitSpec", "SamplerSpec"]


@dataclass(frozen=True)
class FitSpec:
    """The least-squares question (also the start of a Bayesian fit).

    model : a name of :data:`xpcsviewer.fitting.vocabulary` (``auto`` chooses per curve)
    params : name -> ParamSpec for every curve, or None (data-driven defaults)
    overrides : name -> {"value", "lower", "upper", "fixed"}: single fields of the
        per-curve defaults replaced (the GUI's parameter table)
    t_range : (lo, hi) s: the delays fitted, or None for all
    """

    model: str = "auto"
    params: Mapping[str, Any] | None = None
    overrides: Mapping[str, Mapping[str, Any]] | None = None
    t_range: tuple[float, float] | None = None

    def with_(self, **kw: Any) -> FitSpec:
        return replace(self, **kw)


@dataclass(frozen=True)
class SamplerSpec:
    """NUTS settings of a Bayesian fit (:func:`xpcsviewer.fitting.bayes.fit_g2_bayes`).

    ``device``: where the chains run ("auto": host CPU devices, see
    :func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`); ``sampler``: "per_bin"
    (each bin adapts its own step size) or "joint"; ``extend``: a second round for
    bins short of effective draws; ``sample_all``: also the bins the least squares
    finds flat; ``block_size``: draws between progress reports and cancel checks.
    """

    num_warmup: int = 500
    num_samples: int = 1000
    num_chains: int = 4
    seed: int = 0
    device: str = "auto"
    chain_method: str = "auto"
    target_accept_prob: float = 0.8
    max_tree_depth: int = 10
    dense_mass: bool = False
    sampler: str = "per_bin"
    extend: bool = True
    sample_all: bool = False
    block_size: int = 250

    @property
    def draws(self) -> int:
        """Draws per chain, warm-up included (what progress text announces)."""
        return self.num_warmup + self.num_samples

    def with_(self, **kw: Any) -> SamplerSpec:
        return replace(self, **kw)
