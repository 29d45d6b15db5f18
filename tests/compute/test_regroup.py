"""Regrouping g2 from the per-pixel G2/IP/IF stack (issue 13).

- against a straightforward loop implementation of the correlator's normalisation;
- a demo file written by our correlator with the stack in its side file: regrouped
  with its own partition it gives back its stored g2 and errors;
- masking the demo's planted defect (parasitic scattering from the beam-stop edge)
  and regrouping brings the spoiled bins' fitted tau back to the simulated truth.
"""

from __future__ import annotations

import tracemalloc

import h5py
import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.detector.masking import polygon
from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition, restrict_partition
from xpcsviewer.compute.detector.qmap import compute_qmap
from xpcsviewer.compute.detector.regroup import correlated_pixels, regroup_g2
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.fitting import fit_g2
from xpcsviewer.io import read_g2_stack_delay, read_result
from xpcsviewer.jobs.regroup import regroup_file
from xpcsviewer.synthetic.defects import beamstop_fan
from xpcsviewer.synthetic.speckle import simulate_frames

DEMO = "G01_beamstop_fan_R250nm"


def loop_regroup(G2, IP, IF, dq, sq):
    """The standard correlator's normalisation, pixel by pixel and bin by bin.

    G2, IP, IF: (T, H, W); dq, sq: (H, W) 1-based bins (0 = excluded).
    """
    t = G2.shape[0]
    nd = int(dq.max())
    g2 = np.full((t, nd), np.nan)
    err = np.full((t, nd), np.nan)
    for d in range(1, nd + 1):
        pix = dq == d
        if not pix.any():
            continue
        statics = sorted(set(sq[pix].tolist()))
        for k in range(t):
            gs = []
            for s in statics:
                sel = sq == s
                n = sel.sum()
                den = IP[k][sel].sum() * IF[k][sel].sum()
                gs.append(n * G2[k][sel].sum() / (den if den != 0 else 1e8))
            g2[k, d - 1] = np.mean(gs)
            pden = IP[k][pix] * IF[k][pix]
            per_pixel = G2[k][pix] / np.where(pden == 0, 1e8, pden)
            err[k, d - 1] = np.std(per_pixel) / np.sqrt(pix.sum())
    return g2, err


@pytest.fixture(scope="module")
def small_stack():
    q, phi = compute_qmap((20, 26), 10.0, 5.0, 150e-6, 4.0, -3.0)
    mask = np.ones(q.shape, bool)
    mask[5:8, 10:14] = False
    qm = make_partition(q, phi, mask, PartitionGrid(3, 9, 2, 4))
    frames = simulate_frames(q, 200, 1e-3, D=2e6, beta=0.25, rate=1.5, seed=4)
    planes = {}
    res = correlate_multitau(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                             options=MultitauOptions(
                                 backend=get_backend("numpy"),
                                 pixel_sink=lambda k, p: planes.__setitem__(k, p.copy())))
    stack = np.stack([planes[k] for k in range(len(planes))]).astype(np.float64)
    return qm, q, phi, res, stack


def test_pixel_planes_reduce_to_the_correlators_g2(small_stack):
    qm, _q, _phi, res, stack = small_stack
    assert stack.shape == (res.delay_frames.size, 3, 20, 26)
    assert (stack[:, :, ~qm.mask] == 0).all()  # uncorrelated pixels hold 0
    g2, err = loop_regroup(stack[:, 0], stack[:, 1], stack[:, 2], qm.dynamic_roi_map,
                           qm.static_roi_map)
    ok = np.isfinite(res.g2)
    # the stack is float32: the loop on it agrees with the float64 correlator to ~1e-7
    np.testing.assert_allclose(g2[ok], res.g2[ok], rtol=2e-6)
    np.testing.assert_allclose(err[ok], res.g2_err[ok], rtol=2e-5, atol=1e-9)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_regroup_equals_loop_reference_with_another_partition(small_stack, backend):
    qm, q, phi, _res, stack = small_stack
    other = make_partition(q, phi, None, PartitionGrid(4, 8, 1, 1))
    keep = correlated_pixels(qm)
    reg = regroup_g2(lambda k: tuple(stack[k]), stack.shape[0], other, keep,
                     backend=get_backend(backend))
    used = restrict_partition(other, keep)
    assert reg.qmap.hash == used.hash
    g2, err = loop_regroup(stack[:, 0], stack[:, 1], stack[:, 2],
                           used.dynamic_roi_map.astype(int), used.static_roi_map.astype(int))
    np.testing.assert_allclose(reg.g2, g2, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(reg.g2_err, err, rtol=1e-12, atol=1e-15, equal_nan=True)
    np.testing.assert_array_equal(reg.n_pixels, np.bincount(
        used.dynamic_roi_map.ravel().astype(int), minlength=used.n_dynamic + 1)[1:])


def test_pixel_planes_stream_one_delay_at_a_time():
    """Streaming the stack holds a few detector frames (the per-level history the
    past/future means are taken from), never the whole stack."""
    q, phi = compute_qmap((192, 192), 10.0, 5.0, 150e-6, 96.0, 96.0)
    qm = make_partition(q, phi, None, PartitionGrid(4, 16))
    frames = simulate_frames(q, 600, 1e-3, D=2e6, beta=0.25, rate=0.5, seed=2)
    plane_bytes = 3 * q.size * 4
    peak = {"n": 0}

    def sink(k, plane):
        assert plane.shape == (3, 192, 192) and plane.dtype == np.float32
        peak["n"] = max(peak["n"], tracemalloc.get_traced_memory()[1])
        tracemalloc.reset_peak()

    from xpcsviewer.compute._binning import select_pixels
    from xpcsviewer.compute.multitau.correlator import MultitauCorrelator

    corr = MultitauCorrelator(select_pixels(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                              600, backend=get_backend("numpy"))
    for a in range(0, 600, 100):
        corr.process(frames[a:a + 100].reshape(100, -1))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        n = 0
        for k, plane in corr.pixel_planes():
            sink(k, plane)
            n += 1
    finally:
        tracemalloc.stop()
    assert n == corr.delays.size > 30
    frame64 = q.size * 8
    # a plane plus a few per-pixel vectors; the whole stack would be n > 30 planes
    assert peak["n"] - base < 10 * frame64 < n * plane_bytes / 4


# ------------------------------------------------------------------ the demo file
@pytest.fixture(scope="module")
def demo_file(demo_set_dir):
    return next(demo_set_dir.glob(f"{DEMO}_results.hdf"))


def test_demo_stack_is_a_side_file_with_an_external_link(demo_file):
    side = demo_file.with_name(demo_file.stem + "_G2.hdf")
    res = read_result(demo_file)
    assert res.multitau.has_unnormalized_G2
    t = res.multitau.delay_frames.size
    with h5py.File(demo_file, "r") as f:
        link = f["/xpcs/multitau"].get("unnormalized_G2", getlink=True)
        assert isinstance(link, h5py.ExternalLink)
        assert link.filename == side.name and link.path == "/G2IPIF"
    with h5py.File(side, "r") as f:
        ds = f["/G2IPIF"]
        assert ds.shape == (t, 3, 128, 128) and ds.dtype == np.float32
        assert ds.chunks == (1, 1, 128, 128) and ds.compression in ("lzf", "gzip")
        plane = ds[5]
    g, ip, if_ = read_g2_stack_delay(demo_file, 5)
    np.testing.assert_array_equal(np.stack([g, ip, if_]), plane)


def test_regroup_with_own_partition_reproduces_stored_g2(demo_file):
    src = read_result(demo_file)
    out, _img = regroup_file(demo_file)
    mt, mt2 = src.multitau, out.multitau
    np.testing.assert_array_equal(mt2.valid, mt.valid)
    np.testing.assert_array_equal(out.qmap.dynamic_roi_map, src.qmap.dynamic_roi_map)
    v = mt.valid
    # the stored g2 is float32 and so is the stack it is regrouped from
    np.testing.assert_allclose(mt2.g2[v], mt.g2[v], rtol=2e-6)
    np.testing.assert_allclose(mt2.g2_err[v], mt.g2_err[v], rtol=2e-5)


def _fan_polygon(sample: dict, bcx: float, bcy: float, margin_deg: float = 4.0):
    """A user's four clicks around the fan: a trapezoid from the beam stop outward."""
    a = np.deg2rad(sample["defect_angle"])
    half = np.deg2rad(sample["defect_half_width"] + margin_deg)
    r0 = sample["defect_start"] - 3.0
    r1 = (sample["defect_end"] + 4.0) / np.cos(half)  # the far edge clears the arc
    pts = []
    for r, s in ((r0, -1), (r1, -1), (r1, 1), (r0, 1)):
        th = a + s * half
        # display coordinates: x = column + 0.5, y = row + 0.5; phi counts upward
        pts.append((bcx + 0.5 + r * np.cos(th), bcy + 0.5 - r * np.sin(th)))
    return pts


def test_masking_the_planted_defect_brings_tau_back(demo_file):
    """Measured (demo seed 0), tau / truth of bins 1-10: before 1.55 1.57 1.47 1.41 1.42
    1.14 (bins 1-6, which the fan crosses) 1.03 1.06 1.06 1.01; after masking and
    regrouping 1.03 0.97 0.96 1.01 0.98 0.97 1.03 1.06 1.06 1.01."""
    src = read_result(demo_file)
    qm, smp = src.qmap, src.sample
    truth = 1.0 / (smp["D"] * qm.dynamic_q**2)
    poly = _fan_polygon(smp, qm.beam_center_x, qm.beam_center_y)
    masked = polygon(qm.shape, poly)
    fan = beamstop_fan(qm.shape, qm.beam_center_x, qm.beam_center_y, smp["defect_angle"],
                       smp["defect_half_width"], smp["defect_start"], smp["defect_end"],
                       smp["defect_intensity"]) > 0
    assert not (fan & qm.mask & ~masked).any()  # the clicks cover the defect
    spoiled = np.unique(qm.dynamic_roi_map[fan & qm.mask]) - 1
    assert 3 <= spoiled.size < qm.n_dynamic

    def fitted(res):
        mt = res.multitau
        f = fit_g2(mt.tau, mt.g2.T, mt.g2_err.T, mt.fit_mask.T)
        return f.params["tau"], f.status

    before, _ = fitted(src)
    out, _img = regroup_file(demo_file, mask=~masked)
    assert out.qmap.n_dynamic == qm.n_dynamic  # same bins, fewer pixels
    after, status = fitted(out)
    r0, r1 = before / truth, after / truth
    print("tau/truth before:", np.round(r0, 2), "after:", np.round(r1, 2))
    assert (r0[spoiled] > 1.1).all() and np.median(r0[spoiled]) > 1.3, r0[spoiled]
    np.testing.assert_allclose(r1[spoiled], 1.0, atol=0.1)
    assert all(s.value == "converged" for s in status[spoiled])
    clean = np.setdiff1d(np.arange(qm.n_dynamic), spoiled)
    np.testing.assert_allclose(r1[clean], 1.0, atol=0.1)
    # the baseline of the spoiled bins (static bins made inhomogeneous) is back at 1
    last = src.multitau.valid[:, 0].nonzero()[0][-3:]
    assert (src.multitau.g2[last][:, spoiled] > 1.1).all()
    np.testing.assert_allclose(out.multitau.g2[last][:, spoiled], 1.0, atol=0.03)
