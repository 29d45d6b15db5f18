"""The demo's XSVS acquisitions (xpcsviewer.synthetic.demo_xsvs), at a reduced size: the
raw files open with their layout, the Rigaku 2-bit counts stop at the cap, the q-map's
dynamic bins are the groups of pixels that share a tau, truth.json states the truth per
q-bin; and, checked here from the counts alone, the counts have the stated mean and the
visibility beta0 * V(T) of an exponential g1 integrated over the exposure."""

from __future__ import annotations

import copy
import json
from unittest import mock

import numpy as np
import pytest

from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic.demo_xsvs import (
    XSVS_SPECS,
    scaled_spec,
    xsvs_detector,
    xsvs_hits,
    xsvs_truth,
)
from xpcsviewer.synthetic.raw_sim import write_acquisition

X01, X02 = XSVS_SPECS
BIN_KEYS = {"q_bin", "q", "pixels", "M", "beta0", "tau_s", "stretch", "counter_cap",
            "grid_dt_s", "held_field_bias", "rate_hz"}


def _vis(T, tau):
    """(2/T^2) int_0^T (T - t) exp(-2 t / tau) dt, in closed form."""
    x = 2.0 * T / tau
    return 2.0 * (np.exp(-x) - 1.0 + x) / x**2


def _mean_beta(counts, groups=20):
    """Mean and (var - mean) / mean^2 of (pixels, samples) counts, with standard errors
    from ``groups`` groups of whole pixels (pixels are independent)."""
    def stats(c):
        m = c.mean()
        return m, (c.var() - m) / m**2

    m, b = stats(counts)
    parts = np.array([stats(g) for g in np.array_split(counts, groups)])
    se = parts.std(axis=0, ddof=1) / np.sqrt(groups)
    return m, b, se[0], se[1]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """X01 and X02 written at a fifth and a quarter of their size (files, q-maps)."""
    out = tmp_path_factory.mktemp("xsvs")
    specs = [scaled_spec(X01, 0.2), scaled_spec(X02, 0.25)]
    return out, specs, [write_acquisition(out, s, seed=11) for s in specs]


def test_specs_are_last_and_keep_the_other_seeds():
    from xpcsviewer.synthetic.demo_specs import DEMO_SPECS

    assert [s["name"] for s in DEMO_SPECS[-2:]] == ["X01_rigaku_2bit_xsvs", "X02_timepix_xsvs"]
    assert [s["layout"] for s in XSVS_SPECS] == ["rigaku", "timepix"]


def test_files_open_with_layout_cap_and_qmap(small):
    _out, (s1, s2), (a1, a2) = small
    with open_raw_source(a1.files[0]) as raw:
        assert raw.layout == "rigaku" and raw.shape[1:] == (512, 1024)
        assert raw.raw_frames == s1["acquisition"]["n_frames"]
        blocks = list(raw.iter_events())
    counts = np.concatenate([b.value for b in blocks])
    pixels = np.concatenate([b.pixel for b in blocks])
    assert counts.max() == 3 and (counts == 3).sum() > 100  # the 2-bit cap, reached
    assert a1.counter_cap == 3 and a2.counter_cap is None
    # photons only on the q-map's pixels; each dynamic bin holds its stated pixels
    for a, s in ((a1, s1), (a2, s2)):
        dyn = np.asarray(a.qmap.dynamic_roi_map).ravel()
        assert [int((dyn == k + 1).sum()) for k in range(4)] == [
            b["pixels"] for b in s["xsvs"]["bins"]]
        assert np.asarray(a.qmap.dynamic_q).tolist() == sorted(a.qmap.dynamic_q.tolist())
    assert (np.asarray(a1.qmap.dynamic_roi_map).ravel()[pixels[counts > 0]] > 0).all()
    with open_raw_source(a2.files[0]) as raw:
        assert raw.layout == "timepix" and raw.time_tag
        assert raw.tick_s == s2["acquisition"]["tick_s"]
        assert raw.shape[1:] == (512, 512)
        n_ticks = round(s2["acquisition"]["duration_s"] / raw.tick_s)
        assert n_ticks - 10_000 < raw.raw_frames <= n_ticks
        ev = next(iter(raw.iter_events()))
        assert (np.asarray(a2.qmap.dynamic_roi_map).ravel()[ev.pixel] > 0).all()


def test_truth_per_q_bin(small):
    _out, specs, acqs = small
    for s, a in zip(specs, acqs, strict=True):
        t = xsvs_truth(s, a.qmap)
        assert t == xsvs_truth(s)  # the q-map made again is the same
        assert t["M"] == 2 and t["beta0"] == 0.5 and t["stretch"] == 1.0
        assert "integrat" in t["integration"]
        bins = t["q_bins"]
        assert [b["q_bin"] for b in bins] == [1, 2, 3, 4]
        taus = [b["tau_s"] for b in bins]
        assert taus == sorted(taus, reverse=True)  # slower at low q
        for b, want in zip(bins, s["xsvs"]["bins"], strict=True):
            assert BIN_KEYS <= set(b)
            assert b["M"] == 2 and b["beta0"] == 0.5 and b["stretch"] == 1.0
            assert b["tau_s"] == want["tau_s"] and b["pixels"] == want["pixels"]
            assert b["grid_dt_s"] <= b["tau_s"] / 20 * (1 + 1e-9)
            assert 0 <= b["held_field_bias"] < 1e-3
    t1 = xsvs_truth(specs[0], acqs[0].qmap)
    assert t1["counter_cap"] == 3 and t1["frame_time_s"] == 1e-5
    means = [b["mean_count_per_frame"] for b in t1["q_bins"]]
    assert min(means) == pytest.approx(0.1) and max(means) == pytest.approx(1.0)
    assert [b["tau_s"] for b in t1["q_bins"]] == [1e-3, 3e-4, 1e-4, 3e-5]
    # at one photon per frame a tenth of the frames is at the cap
    assert 0.08 < t1["q_bins"][0]["at_cap_fraction_1frame"] < 0.15
    t2 = xsvs_truth(specs[1], acqs[1].qmap)
    assert t2["counter_cap"] is None and t2["tick_s"] == 1.5625e-9
    assert [b["tau_s"] for b in t2["q_bins"]] == [1e-2, 1e-3, 1e-4, 1e-5]


def test_frames_integrate_the_intensity_uncapped():
    """X01's fastest bin (tau = 3 frames) without the cap, at T = 1 frame: the mean is the
    stated one and beta = beta0 V(frame) = 0.405 (held over the frame it would be 0.5)."""
    s = copy.deepcopy(X01)
    s["acquisition"].update(n_frames=1000, counter_cap=None)
    for b in s["xsvs"]["bins"][:3]:
        b["pixels"] = 4
    fast = s["xsvs"]["bins"][3]
    fast.update(pixels=1000, mean_count=1.0)
    qm = xsvs_detector(s)[0]
    f, p, c = xsvs_hits(s, qm, seed=3)
    pix = np.flatnonzero(np.asarray(qm.dynamic_roi_map).ravel() == 4)
    counts = np.zeros((pix.size, 1000))
    sel = np.isin(p, pix)
    counts[np.searchsorted(pix, p[sel]), f[sel]] = c[sel]
    assert counts.max() > 3  # no cap
    m, beta, m_se, b_se = _mean_beta(counts)
    want = 0.5 * _vis(1e-5, 3e-5)
    assert abs(want - 0.405) < 1e-3
    assert abs(m - 1.0) < 4 * m_se + 1e-3
    assert abs(beta - want) < 4 * b_se and b_se < 0.02 * want


def test_event_list_visibility_at_tau(small):
    """X02's 10 us bin binned at T = tau/3, tau, 3 tau: beta = beta0 V(T), mean = rate T."""
    _out, (_s1, s2), (_a1, a2) = small
    b = s2["xsvs"]["bins"][3]
    tau, rate, tick = b["tau_s"], b["rate_hz"], s2["acquisition"]["tick_s"]
    with open_raw_source(a2.files[0]) as raw:
        blocks = list(raw.iter_events())
    frame = np.concatenate([e.frame for e in blocks]).astype(np.int64)
    pixel = np.concatenate([e.pixel for e in blocks]).astype(np.int64)
    pix = np.flatnonzero(np.asarray(a2.qmap.dynamic_roi_map).ravel() == 4)
    sel = np.isin(pixel, pix)
    k, t = np.searchsorted(pix, pixel[sel]), frame[sel]
    n_ticks = round(s2["acquisition"]["duration_s"] / tick)
    for f in (1 / 3, 1.0, 3.0):
        T = round(f * tau / tick)
        nw = n_ticks // T // 20 * 20
        ok = t // T < nw
        counts = np.bincount(k[ok] * nw + t[ok] // T, minlength=pix.size * nw)
        # pixels are few here: runs of windows (many tau long) stand in for them
        counts = counts.reshape(pix.size * 20, -1).astype(float)
        m, beta, m_se, b_se = _mean_beta(counts, groups=40)
        want = 0.5 * _vis(T * tick, tau)
        assert abs(m - rate * T * tick) < 4 * m_se + 1e-3 * m
        assert abs(beta - want) < 4 * b_se + 0.005, (f, beta, want, b_se)
        assert b_se < 0.05 * want


def test_demo_writes_xsvs_truth(tmp_path):
    """Through `xpcsviewer demo`'s machinery: raw files, q-map, a result correlated on
    photons (truth under /entry/sample), truth.json with the per-bin truth; reused."""
    from xpcsviewer.compute.multitau.photons import available
    from xpcsviewer.io import read_result
    from xpcsviewer.synthetic import demo as demo_mod

    if not available():
        pytest.skip("the photon correlator needs numba")
    specs = [scaled_spec(X01, 0.1), scaled_spec(X02, 0.05)]
    with mock.patch.object(demo_mod, "DEMO_SPECS", specs):
        made = demo_mod.write_demo(tmp_path, seed=0)
        assert len(made.simulated) == 2
        for i, s in enumerate(specs):
            assert demo_mod.check_demo_file(tmp_path, s, i, 0) is None
        again = demo_mod.write_demo(tmp_path, seed=0)
        assert len(again.reused) == 2 and not again.simulated
    doc = json.loads((tmp_path / "raw" / "truth.json").read_text())
    entries = {e["name"]: e for e in doc["acquisitions"]}
    for s in specs:
        e = entries[s["name"]]
        assert e["xsvs"] == json.loads(json.dumps(xsvs_truth(s)))
        assert e["counter_cap"] == s["acquisition"]["counter_cap"]
        assert e["xsvs_command"].startswith(f"xpcsviewer xsvs {e['open']} --qmap {e['qmap']}")
        assert e["truth"]["tau"] == [b["tau_s"] for b in s["xsvs"]["bins"]]
        r = read_result(tmp_path / e["result"])
        assert np.allclose(np.ravel(r.sample["tau"]), e["truth"]["tau"])
        assert r.sample["contrast"] == 0.5
    assert "--cap 3" in entries[specs[0]["name"]]["xsvs_command"]
    assert entries[specs[1]["name"]]["time_tag"] is True
