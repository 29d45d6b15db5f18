"""Speckle simulator physics, analytic helpers, demo determinism."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.io import read_result
from xpcsviewer.synthetic.analytic import (
    c2_model,
    g2_model,
    sphere_form_factor,
    stokes_einstein,
    water_viscosity,
)
from xpcsviewer.synthetic.demo import DEMO_SPECS, write_demo
from xpcsviewer.synthetic.results import multitau_delays
from xpcsviewer.synthetic.speckle import Geometry, iter_frames, simulate_frames


def test_stokes_einstein_and_water():
    assert water_viscosity(298.15) == pytest.approx(0.890e-3, rel=0.01)
    # D = kT / (6 pi eta R), by hand for R = 100 nm at 25 C: 2.45e-12 m^2/s
    d = 1.380649e-23 * 298.15 / (6 * np.pi * 0.89e-3 * 100e-9) * 1e20
    assert stokes_einstein(100e-9, 298.15, 0.89e-3) == pytest.approx(d, rel=1e-12)
    assert stokes_einstein(100e-9) == pytest.approx(2.45e8, rel=0.01)


def test_g2_c2_models_and_form_factor():
    tau = np.array([0.0, 1e-3, 2e-3])
    g = g2_model(tau, np.array([0.01, 0.02]), 1e4, 0.2)
    assert g.shape == (3, 2)
    np.testing.assert_allclose(g[:, 1], 1 + 0.2 * np.exp(-2 * 1e4 * 0.02**2 * tau))
    t = np.arange(5) * 0.1
    c = c2_model(t, 3.0, 0.3)
    np.testing.assert_allclose(
        c, 1 + 0.3 * np.exp(-2 * 3.0 * np.abs(t[:, None] - t[None, :]))
    )
    # ageing factor 1/(1+t/ta): integral is ta*ln((1+t2/ta)/(1+t1/ta)), trapezoid close to it
    tt = np.linspace(0, 10, 2001)
    ca = c2_model(tt, 1.0, 0.2, lambda x: 1.0 / (1.0 + x / 2.0))
    exact = 1 + 0.2 * np.exp(-2 * 2.0 * np.log((1 + 10 / 2.0) / 1.0))
    assert ca[0, -1] == pytest.approx(exact, rel=1e-5)
    q = np.array([1e-6, 0.001, 4.493409457909064 / 1000.0])  # R = 1000 Angstrom
    p = sphere_form_factor(q, 100e-9)
    assert p[0] == pytest.approx(1.0) and p[2] == pytest.approx(
        0.0, abs=1e-20
    )  # first zero at qR = 4.4934
    x = 0.001 * 1000.0
    assert p[1] == pytest.approx(
        (3 * (np.sin(x) - x * np.cos(x)) / x**3) ** 2, rel=1e-12
    )


def test_multitau_delays_standard_list():
    d = multitau_delays(100_000)
    assert d[:12].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]
    assert d[-1] == 81920 and len(d) == 61  # as in the real files


def test_speckle_contrast_and_decay():
    """Frames with uniform q: g2(tau) from a brute-force average = 1 + (1/M) exp(-2 Gamma tau)."""
    shape, n, dt = (24, 24), 4000, 1e-3
    q = np.full(shape, 0.01)
    d = 2.0 / (2 * 0.01**2 * 20 * dt) / 2  # Gamma = D q^2 -> 1/Gamma = 20 frames
    frames = simulate_frames(shape, n, dt, q, d, beta=0.25, rate=4.0, seed=1, chunk=500)
    assert frames.shape == (n, *shape) and frames.dtype == np.uint16
    x = frames.astype(np.float64)
    assert x.mean() == pytest.approx(4.0, rel=0.02)
    gamma = d * 0.01**2
    for k in (1, 10, 40):
        num = (x[:-k] * x[k:]).mean(axis=0)
        g2 = num / (x[:-k].mean(axis=0) * x[k:].mean(axis=0))
        expected = 1 + 0.25 * np.exp(-2 * gamma * k * dt)
        assert g2.mean() == pytest.approx(expected, abs=0.015), k
    # variance of Poisson-speckle counts: <n> + beta <n>^2 (contrast 1/M)
    var = x.var(axis=0).mean()
    assert var == pytest.approx(4.0 + 0.25 * 16.0, rel=0.06)


def test_speckle_deterministic_chunk_independent_and_options():
    q = Geometry(shape=(8, 10), bcx=4, bcy=4).qmap()[0]
    a = simulate_frames(q, 30, 1e-3, D=1e6, seed=5, chunk=7)
    b = simulate_frames(q, 30, 1e-3, D=1e6, seed=5, chunk=30)
    np.testing.assert_array_equal(a, b)
    c = simulate_frames(q, 30, 1e-3, D=1e6, seed=6, chunk=30)
    assert not np.array_equal(a, c)
    drift = simulate_frames(
        q, 400, 1e-3, D=1e6, rate=5.0, seed=1, drift=lambda t: np.exp(-t / 0.2)
    )
    first, last = drift[:50].mean(), drift[-50:].mean()
    assert last / first == pytest.approx(np.exp(-0.35 / 0.2), rel=0.15)
    chunks = list(
        iter_frames(q, 25, 1e-3, 1e6, chunk=10, ageing=lambda t: 1.0 / (1 + t))
    )
    assert [len(x) for x in chunks] == [10, 10, 5]
    with pytest.raises(ValueError):
        list(iter_frames(q, 10, 1e-3, 1e6, beta=0.0))


@pytest.mark.slow
def test_speckle_ageing_slows_decay():
    shape, n, dt = (20, 20), 3000, 1e-3
    q = np.full(shape, 0.01)
    d = 1.0 / (0.01**2 * 5 * dt)  # 1/Gamma = 5 frames at t = 0
    x = simulate_frames(
        shape,
        n,
        dt,
        q,
        d,
        beta=0.5,
        rate=5.0,
        seed=2,
        ageing=lambda t: 1.0 / (1.0 + t / 0.5),
    ).astype(float)

    def g2_at(sl, k):
        y = x[sl]
        return ((y[:-k] * y[k:]).mean(0) / (y[:-k].mean(0) * y[k:].mean(0))).mean()

    early, late = g2_at(slice(0, 500), 5), g2_at(slice(2500, 3000), 5)
    assert late > early + 0.1  # the sample has slowed down


def test_demo_deterministic_and_truth(demo_set_dir, tmp_path):
    a = sorted(demo_set_dir.glob("*_results.hdf"))
    assert len(a) == len(DEMO_SPECS) >= 6
    # re-simulating a subset gives the same numbers; another seed does not
    names = ["A01_silica_R100nm_water", "D01_silica_R250nm_both"]
    b = write_demo(tmp_path / "b", seed=0, names=names, workers=1)
    c = write_demo(tmp_path / "c", seed=1, names=names[:1])
    with pytest.raises(ValueError, match="unknown demo"):
        write_demo(tmp_path / "d", names=["nope"])
    same = [p for p in a if any(p.name.startswith(n) for n in names)]
    for pa, pb in zip(same, b, strict=True):
        ra, rb = read_result(pa), read_result(pb)
        assert ra.analysis_type == rb.analysis_type
        np.testing.assert_array_equal(ra.multitau.g2, rb.multitau.g2)
        np.testing.assert_array_equal(ra.saxs_1d, rb.saxs_1d)
        if ra.twotime is not None:
            np.testing.assert_array_equal(ra.twotime.g2_full, rb.twotime.g2_full)
    assert not np.array_equal(read_result(same[0]).multitau.g2, read_result(c[0]).multitau.g2)
    for pa in a:
        ra = read_result(pa)
        if str((ra.multitau or ra.twotime).config.get("source", "")).startswith(
                "xpcsviewer demo:"):
            # correlated from the demo's raw acquisitions (photon-sparse, and dense with
            # planted faults): tests/cli/test_demo_sparse.py, tests/cli/test_demo_faults.py
            continue
        for key in ("D", "radius", "temperature", "viscosity", "contrast", "model"):
            assert key in ra.sample
        assert ra.sample_units["D"] == "\u00c5^2/s"
        assert ra.sample["D"] == pytest.approx(
            stokes_einstein(
                ra.sample["radius"], ra.sample["temperature"], ra.sample["viscosity"]
            )
        )
        # made by our correlator from simulated frames, not by a formula
        cfg = (ra.multitau or ra.twotime).config
        assert cfg["source"] == "xpcsviewer simulated speckle frames"
    kinds = [read_result(p).analysis_type for p in a]
    assert ("Twotime",) in kinds and ("Twotime", "Multitau") in kinds
    sheared = read_result(a[3])
    assert sheared.qmap.dynamic_num_pts[1] > 1  # q x phi partition
    # anisotropy: at the same q, the decay along the flow (phi ~ 0 or 180) is faster
    qm, mt = sheared.qmap, sheared.multitau
    band = np.isclose(qm.dynamic_q, qm.dynamic_q[np.argmin(np.abs(qm.dynamic_q - 0.003))])
    cos = np.abs(np.cos(np.radians(qm.dynamic_phi)))
    rows = (mt.tau >= 1e-4) & (mt.tau <= 5e-4)
    along = (mt.g2[rows][:, band & (cos > 0.9)] - 1).mean()
    across = (mt.g2[rows][:, band & (cos < 0.45)] - 1).mean()
    assert along < 0.8 * across


def test_demo_physics_recovered_from_correlated_frames(demo_set_dir):
    """The demo's g2 come from our correlator on simulated frames: a joint fit
    of each Brownian file gives back the D and contrast the frames were made with."""
    from xpcsviewer.fitting import fit_diffusion_joint

    for name in ("A01", "A02", "A03"):
        r = read_result(next(demo_set_dir.glob(f"{name}_*.hdf")))
        mt = r.multitau
        fit = fit_diffusion_joint(
            r.qmap.dynamic_q, mt.tau, mt.g2.T, mt.g2_err.T, mt.valid.T, alpha=2.0
        )
        # 10 %: a 2000-frame run of a few hundred pixels per bin, with the
        # finite-run and q-smearing biases any real measurement has
        assert fit.D == pytest.approx(r.sample["D"], rel=0.1), name
        good = np.isfinite(fit.contrast)
        assert np.median(fit.contrast[good]) == pytest.approx(r.sample["contrast"], rel=0.1)


def test_demo_ageing_and_damage_visible(demo_set_dir):
    """Two-time of the ageing gel: late segments decay slower than early ones; the
    damaged sample loses intensity over the run and its partial g2 speed up."""
    gel = read_result(next(demo_set_dir.glob("C01_*.hdf")))
    seg = gel.twotime.g2_segments  # (Np, 5, N // 5)
    d = slice(5, 21)  # delays in frames; the fastest processed bin
    first, last = (seg[-1, 0, d] - 1).mean(), (seg[-1, -1, d] - 1).mean()
    assert last > first + 0.03
    dmg = read_result(next(demo_set_dir.glob("E01_*.hdf")))
    it = dmg.intensity_vs_time[1]
    n = it.size // 10
    t_run = dmg.frame_time * it.size
    # mean of exp(-t / t_d) over the last and the first tenth of the run
    expect = np.exp(-0.9 * t_run / dmg.sample["intensity_decay_time"])
    assert it[-n:].mean() / it[:n].mean() == pytest.approx(expect, rel=0.15)
    p = dmg.multitau.g2_partial
    assert p is not None and p.shape[0] == 5
    rows = (dmg.multitau.tau >= 1e-4) & (dmg.multitau.tau <= 4e-4)
    cols = (dmg.qmap.dynamic_q > 0.003) & (dmg.qmap.dynamic_q < 0.0065)
    # the dynamics speed up with the dose: the cumulative g2 falls at fixed delays
    assert np.nanmean(p[-1][rows][:, cols]) < np.nanmean(p[0][rows][:, cols]) - 0.01
