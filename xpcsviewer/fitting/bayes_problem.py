"""What one NUTS sampling run of the Bayesian g2 fits is given, as frozen values.

:class:`_Problem`: the arrays, priors and start of one model's bins (made by
:mod:`xpcsviewer.fitting.bayes`); :class:`_Run`: the sampler settings and the devices
the chains run on. The samplers (:mod:`xpcsviewer.fitting.bayes_run`) take these two
instead of twenty arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from xpcsviewer.fitting.bayes_devices import chain_method_of
from xpcsviewer.fitting.models import G2Model
from xpcsviewer.fitting.spec import SamplerSpec


@dataclass(frozen=True, eq=False)  # arrays: no value equality
class _Problem:
    """One sampling run's data (B bins): delays ``t`` (T,) (non-positive ones replaced),
    ``y``, ``sigma``, ``mask`` (B, T); per-bin prior bounds and fixed values (name ->
    (B,)); ``aux`` (m (T,), dt) or None; constrained start values per sample site;
    ``t_ref`` (B,): the first delay of each bin (the contrast shear)."""

    t: np.ndarray
    y: np.ndarray
    sigma: np.ndarray
    mask: np.ndarray
    model: G2Model
    lower: dict[str, np.ndarray]
    upper: dict[str, np.ndarray]
    fixed: dict[str, np.ndarray]
    aux: tuple | None
    unit_stretch: bool
    init_values: dict[str, Any]
    t_ref: np.ndarray

    def with_(self, **kw: Any) -> _Problem:
        return replace(self, **kw)


@dataclass(frozen=True)
class _Run:
    """How one sampling run samples: the NUTS settings (its own seed) and the devices
    (:func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`)."""

    spec: SamplerSpec
    devices: tuple

    @property
    def n_blocks(self) -> int:
        """Blocks of draws (progress and cancel between them)."""
        return max(1, math.ceil(self.spec.num_samples / max(1, self.spec.block_size)))

    @property
    def per_block(self) -> int:
        return math.ceil(self.spec.num_samples / self.n_blocks)

    @property
    def method(self) -> str:
        return chain_method_of(self.devices)

    def seeded(self, seed: int) -> _Run:
        return replace(self, spec=self.spec.with_(seed=int(seed)))
