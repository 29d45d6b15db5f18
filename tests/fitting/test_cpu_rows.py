"""The CPU's fewer rows per compiled call (lm.rows_per_call) change no fitted value.

On the CPU the LM and grid kernels run 64 (or 128 with 32 delays) rows per call instead
of 256: fewer idle lanes. On the machine that chose the sizes XLA computed a lane alike
at them (bit for bit that of 256 rows); another CPU or XLA may vectorise differently, so
the test asks for round-off (1e-7 relative; fewer lanes than that rule moved values by
about 1e-8) and the same statuses and models, not for the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.fitting import averaging_factors, fit_g2
from xpcsviewer.fitting import grid as grid_mod
from xpcsviewer.fitting import lm as lm_mod
from xpcsviewer.jobs.warmup import _curves

pytest.importorskip("xpcsviewer.backends.jax_backend")


def _fields(res) -> dict[str, np.ndarray]:
    out = {}
    for k, v in vars(res).items():
        if isinstance(v, dict):
            out.update({f"{k}.{n}": np.asarray(a) for n, a in v.items()})
        elif isinstance(v, np.ndarray):
            out[k] = v
    return out


def test_rows_per_call():
    class Dev:
        def __init__(self, platform: str) -> None:
            self.platform = platform

    assert lm_mod.rows_per_call(Dev("cpu"), 64) == 64
    assert lm_mod.rows_per_call(Dev("cpu"), 32) == 128
    assert lm_mod.rows_per_call(Dev("cpu"), 4) == lm_mod.LM_ROWS
    assert lm_mod.rows_per_call(Dev("gpu"), 64) == lm_mod.LM_ROWS
    assert lm_mod.rows_per_call(Dev("cuda"), 64, 100, 10) == 100


@pytest.mark.slow
@pytest.mark.parametrize("n_t", [30, 61])
def test_cpu_rows_equal_256_rows(monkeypatch, n_t):
    be = get_backend("jax")
    tau, y, err, frames = _curves(n_t, n_b=40, model="double")
    rng = np.random.default_rng(n_t)
    y = y + 0.01 * rng.standard_normal(y.shape) * (rng.random((40, 1)) < 0.3)
    aux = (averaging_factors(frames), 1e-5)
    got = _fields(fit_g2(tau, y, err, model="auto", aux=aux, backend=be, device="cpu"))

    def full(device, n_t, accel=lm_mod.LM_ROWS, cpu=lm_mod.CPU_ROWS):
        return accel

    monkeypatch.setattr(lm_mod, "rows_per_call", full)
    monkeypatch.setattr(grid_mod, "rows_per_call", full)
    ref = _fields(fit_g2(tau, y, err, model="auto", aux=aux, backend=be, device="cpu"))
    assert got.keys() == ref.keys()
    for k, v in ref.items():
        if v.dtype == object:
            assert [str(s) for s in got[k]] == [str(s) for s in v], k
        elif v.dtype.kind == "f":
            np.testing.assert_allclose(got[k], v, rtol=1e-7, atol=1e-12, equal_nan=True,
                                       err_msg=k)
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=k)
