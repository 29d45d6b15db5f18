"""Issue 33 item 3: the Stability tab's segments on the SAXS-1D scale, and a
beam-damage verdict driven by significant drifts, not by a noisy high-q tail."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.io import read_result
from xpcsviewer.views import saxs as sd
from xpcsviewer.views import stability as sst

B0147 = "aps8idi_llps_saxpcs/Average_B0147_S3_7_300C10p_att00_Rq0_00001_00200_results.hdf"


def _analysis(res, **kw):
    return sst.stability_analysis(res.saxs_1d_segments, res.qmap, saxs_1d=res.saxs_1d, **kw)


@pytest.fixture(scope="module")
def e01(demo_set_dir):
    return read_result(next(demo_set_dir.glob("E01_beam_damage_*_results.hdf")))


@pytest.mark.realdata
def test_b0147_segments_put_on_the_saxs1d_scale_and_not_flagged(real_data_dir):
    res = read_result(real_data_dir / B0147)
    st = _analysis(res)
    # boost_corr's segment rows are ~890x the file's scattering_1d (issue: 860x)
    assert 700 < st.scale < 1100
    _q, mean, _, _ = sd.saxs1d_profiles(res.saxs_1d, res.qmap)
    ok = np.isfinite(mean) & np.all(np.isfinite(st.profiles), axis=0)
    ratio = st.profiles[:, ok].mean(axis=0).sum() / mean[ok].sum()
    assert ratio == pytest.approx(1.0, rel=0.02)  # drawn on one scale
    np.testing.assert_allclose(st.mean_profile, mean, equal_nan=True)
    label = sst.stability_axis_label(st)
    assert label.startswith(sd.normalization_label("none")) and f"{st.scale:.4g}" in label
    assert f"{st.scale:.4g}" in sst.stability_scale_note(st)
    # the old number was 52 % from the noisy high-q tail; low q overlaps
    assert not st.flagged and st.max_rel_change < 0.10
    assert "stable" in sst.stability_summary(st, res.label)
    assert np.all(np.abs(st.drift) < st.z * st.drift_err)  # no group above the noise


def test_demo_beam_damage_file_flagged_on_its_own_scale(e01):
    st = _analysis(e01)
    assert st.scale == 1.0  # our correlator writes per-segment means
    assert sst.stability_axis_label(st) == sd.normalization_label("none")
    assert st.flagged and st.significant.all()
    assert st.max_rel_change == pytest.approx(0.48, abs=0.05)  # I falls by ~half
    assert np.all(st.drift < 0)
    assert "beam damage" in sst.stability_summary(st, e01.label)


def _noise_only(qmap, seed, n_seg=12):
    """Segments with the same expected I(q) (a steep power law: a few photons per
    bin at high q) and Poisson noise only."""
    rng = np.random.default_rng(seed)
    ns = len(qmap.static_index_mapping)
    npix = np.bincount(qmap.static_roi_map.ravel(), minlength=ns + 1)[1:ns + 1]
    q = qmap.static_q
    rate = 2e3 * (q / q.min()) ** -4.0  # photons per pixel per segment
    counts = rng.poisson(rate * npix, size=(n_seg, ns))
    return counts / npix / 1e3  # per frame, 1000 frames a segment


def test_noise_only_is_never_flagged(e01):
    qmap = e01.qmap
    numbers = []
    for seed in range(20):
        seg = _noise_only(qmap, seed)
        st = sst.stability_analysis(seg, qmap)
        assert not st.significant.any(), (seed, sst.stability_summary(st))
        numbers.append(st.max_rel_change)
    # the tail is noisy enough that single groups of q points scatter by >10 %
    seg = _noise_only(qmap, 0)
    tail = seg[:, np.argsort(qmap.static_q)[-8:]].sum(axis=1)
    assert np.std(tail) / np.mean(tail) > 0.1
    assert max(numbers) == 0.0


def test_noise_plus_a_drift_is_flagged(e01):
    qmap = e01.qmap
    seg = _noise_only(qmap, 3) * np.linspace(1.0, 0.75, 12)[:, None]
    st = sst.stability_analysis(seg, qmap)
    assert st.flagged and st.max_rel_change == pytest.approx(0.25, abs=0.05)
