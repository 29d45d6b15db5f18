"""A fit asked for on "cpu" reuses the programs of one left to "auto" (the
command line's routing pins "cpu", the GUI and the warm-up say "auto"; explicit placement
was another key of jit's cache, and the live command's first fit recompiled 12 programs,
about 1 s, after the warm-up had compiled them)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("jax")


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.n = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Compiling" in record.getMessage():
            self.n += 1


def test_cpu_fit_compiles_nothing_after_an_auto_fit():
    import jax

    from xpcsviewer.backends import get_backend, get_device_manager
    from xpcsviewer.backends.device import default_placement
    from xpcsviewer.fitting import fit_g2

    if get_device_manager()._accels:
        pytest.skip("an accelerator is visible: 'cpu' must stay explicit there")
    be = get_backend("jax")
    tau = np.geomspace(1e-5, 1e-1, 23)
    rng = np.random.default_rng(1)
    y = 1 + 0.2 * np.exp(-2 * tau / np.array([[1e-3], [1e-2], [3e-4]])) \
        + 0.002 * rng.standard_normal((3, 23))
    err = np.full_like(y, 0.002)
    ref = fit_g2(tau, y, err, model="single", backend=be, device="auto")
    count = _Count()
    log = logging.getLogger("jax")
    old = log.level
    log.addHandler(count)
    log.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles(True):
            got = fit_g2(tau, y, err, model="single", backend=be, device="cpu")
    finally:
        log.removeHandler(count)
        log.setLevel(old)
    assert count.n == 0
    np.testing.assert_array_equal(got.params["tau"], ref.params["tau"])
    assert default_placement(get_device_manager().cpu_device()) is None
    assert default_placement(None) is None
