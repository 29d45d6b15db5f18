"""Time-tag correlation of event lists (a frame per detector tick): a simulated Brownian
event list with tau_c = 200 ns gives tau back within 3 % once fitted, and the photon g2
on 1 us ticks equals the dense multi-tau on the same photons binned into 1 us frames."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.multitau.photons import available, correlate_multitau_events
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic.sparse_files import write_timepix
from xpcsviewer.synthetic.sparse_speckle import simulate_arrivals

pytestmark = pytest.mark.skipif(not available(), reason="the photon correlator needs numba")

TICK = 1.5625e-9  # Timepix3 time of arrival


def _maps(shape, n_dyn):
    """Dynamic bins as column bands, two static bins per dynamic bin."""
    h, w = shape
    cols = np.arange(w)
    dyn = np.broadcast_to(1 + cols * n_dyn // w, shape).copy()
    stat = 2 * (dyn - 1) + 1 + (np.arange(h)[:, None] >= h // 2)
    return dyn, stat


def test_timetag_brownian_tau_200ns_fitted_within_3_percent(tmp_path):
    from xpcsviewer.fitting import averaging_factors, fit_g2

    tau, beta, shape = 200e-9, 0.5, (32, 32)
    x, y, toa = simulate_arrivals(shape, 5e6, tau, beta, 4e-4, TICK, seed=1)  # 2M photons
    path = write_timepix(tmp_path / "tpx.h5", x, y, toa, TICK, shape)
    dyn, stat = _maps(shape, 1)
    with open_raw_source(path) as raw:  # no bin time: the time-tag view
        assert raw.time_tag and raw.frame_time == pytest.approx(TICK)
        res = correlate_multitau_events(FrameStream(lambda: raw.iter_events(), raw.n_frames),
                                        Partition(dyn, stat))
    t = res.delay_frames * TICK
    g, err = res.g2[:, 0], res.g2_err[:, 0]
    # delays up to 10 tau; the model with the multi-tau level averaging (frames of
    # m ticks at each level), which the plain exponential misses by ~0.5 % here
    sel = (t < 10 * tau) & np.isfinite(g)
    fit = fit_g2(t[sel], g[sel][None], err[sel][None], model="single_avgcorr",
                 aux=(averaging_factors(res.delay_frames[sel]), TICK))
    got = float(fit.params["tau"][0])
    assert got == pytest.approx(tau, rel=0.03), (got, float(fit.errors["tau"][0]))
    assert float(fit.errors["tau"][0]) < 0.01 * tau  # a precise g2: 1 % or better
    assert float(fit.params["contrast"][0]) == pytest.approx(beta, abs=0.03)


def test_timetag_on_1us_ticks_equals_dense_multitau_of_1us_frames(tmp_path):
    shape = (8, 12)
    x, y, toa = simulate_arrivals(shape, 2e5, 40e-6, 0.5, 4e-3, 1e-6, seed=5)
    path = write_timepix(tmp_path / "tpx_us.h5", x, y, toa, 1e-6, shape)
    dyn, stat = _maps(shape, 3)
    mask = np.ones(shape, bool)
    mask[0, 0] = False
    with open_raw_source(path) as raw:
        assert raw.time_tag and raw.frame_time == pytest.approx(1e-6)
        n = raw.n_frames
        ev = correlate_multitau_events(FrameStream(lambda: raw.iter_events(max_events=5000), n),
                                       Partition(dyn, stat, mask))
    # the same photons binned into 1 us frames, from the first event (as the reader)
    frames = np.zeros((n, shape[0] * shape[1]), np.uint16)
    np.add.at(frames, (toa - toa[0], y * shape[1] + x), 1)
    dense = correlate_multitau(frames.reshape(n, *shape), Partition(dyn, stat, mask),
                               options=MultitauOptions(backend=get_backend("numpy")),
                               engine="backend")
    np.testing.assert_array_equal(ev.delay_frames, dense.delay_frames)
    for a, b in ((ev.g2, dense.g2), (ev.g2_err, dense.g2_err),
                 (ev.g2_static, dense.g2_static)):
        assert np.isfinite(a).sum() > 0.9 * a.size
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10, equal_nan=True)
