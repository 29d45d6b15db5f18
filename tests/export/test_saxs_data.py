"""views (saxs, intensity, display_image): the numbers behind the SAXS, stability,
intensity and q-map views, checked against straightforward NumPy loops and closed forms."""

from __future__ import annotations

import csv
import math
from types import SimpleNamespace

import numpy as np
import pytest

from xpcsviewer.export import files as sdf
from xpcsviewer.views import display_image as sdi
from xpcsviewer.views import intensity as sdt
from xpcsviewer.views import saxs as sd


def make_qmap(n0=6, n1=3, missing=(4,), energy=10.0):
    """A static grid n0 x n1 with the natural cells in ``missing`` left empty."""
    natural = np.array([k for k in range(n0 * n1) if k not in missing])
    h, w = 40, 50
    rows, cols = np.indices((h, w))
    return SimpleNamespace(
        static_index_mapping=natural,
        static_num_pts=(n0, n1),
        static_v_list_dim0=np.linspace(0.001, 0.006, n0),
        static_v_list_dim1=np.linspace(-60, 60, n1),
        dynamic_roi_map=((rows * w + cols) % 5).astype(int),
        static_roi_map=((rows * w + cols) % 7).astype(int),
        mask=np.ones((h, w), bool),
        shape=(h, w),
        n_dynamic=4, n_static=6,
        dynamic_q=np.array([0.1, 0.2, 0.3, 0.4]),
        dynamic_phi=np.array([0.0, 10.0, 20.0, 30.0]),
        static_q=np.arange(1, 7) * 0.01,
        static_phi=np.arange(1, 7) * 5.0,
        beam_center_x=20.5, beam_center_y=10.0,
        detector_distance=5.0, pixel_size=75e-6, energy_kev=energy,
    )


def test_expand_static_places_values_by_index_mapping():
    qm = make_qmap()
    vals = np.arange(len(qm.static_index_mapping), dtype=float) + 1
    grid = sd.expand_static(vals, qm)
    assert grid.shape == (6, 3)
    for k, nat in enumerate(qm.static_index_mapping):
        assert grid[nat // 3, nat % 3] == vals[k]
    assert np.isnan(grid[4 // 3, 4 % 3])
    with pytest.raises(ValueError, match="bins"):
        sd.expand_static(vals[:-1], qm)


def test_saxs1d_profiles_mean_over_existing_phi_cells(rng):
    qm = make_qmap()
    vals = rng.uniform(1, 2, len(qm.static_index_mapping))
    q, mean, phi, lines = sd.saxs1d_profiles(vals, qm)
    grid = np.full(18, np.nan)
    grid[qm.static_index_mapping] = vals
    grid = grid.reshape(6, 3)
    for i in range(6):
        cells = [grid[i, j] for j in range(3) if not np.isnan(grid[i, j])]
        assert mean[i] == pytest.approx(sum(cells) / len(cells), rel=1e-14)
    np.testing.assert_array_equal(q, qm.static_v_list_dim0)
    assert phi.shape == (3,) and lines.shape == (3, 6)
    np.testing.assert_array_equal(lines[2], grid[:, 2])


@pytest.mark.parametrize("mode,power", [("iq2", 2), ("iq4", 4)])
def test_normalization_powers(mode, power, rng):
    q = np.linspace(0.001, 0.01, 7)
    y = rng.uniform(1, 5, (2, 7))
    out = sd.apply_normalization(q, y, mode)
    for i in range(2):
        for j in range(7):
            assert out[i, j] == pytest.approx(y[i, j] * q[j] ** power, rel=1e-14)


def test_i0_divides_by_first_finite_q_of_each_curve_not_first_curve():
    q = np.array([1.0, 2.0, 3.0])
    y = np.array([[np.nan, 4.0, 2.0], [10.0, 5.0, 1.0]])
    out = sd.apply_normalization(q, y, "i0")
    np.testing.assert_allclose(out[0], [np.nan, 1.0, 0.5])
    np.testing.assert_allclose(out[1], [1.0, 0.5, 0.1])
    single = sd.apply_normalization(q, np.array([8.0, 4.0, 2.0]), "i0")
    np.testing.assert_allclose(single, [1.0, 0.5, 0.25])  # not all ones
    with pytest.raises(ValueError, match="normalisation"):
        sd.apply_normalization(q, y, "bogus")


def test_background_subtraction_and_grid_check():
    q = np.array([1.0, 2.0, 3.0])
    out = sd.subtract_background(q, np.array([5.0, 4.0, 1.0]), q, np.array([1.0, 1.0, 1.0]), 2.0)
    np.testing.assert_allclose(out, [3.0, 2.0, np.nan])  # 1 - 2 <= 0 -> NaN
    out2 = sd.subtract_background(q, np.array([5.0, 4.0, 1.0]), q, np.ones(3), 2.0,
                                  clip_negative=False)
    np.testing.assert_allclose(out2, [3.0, 2.0, -1.0])
    with pytest.raises(ValueError, match="q grid"):
        sd.subtract_background(q, np.ones(3), q * 1.1, np.ones(3))


def test_q_range_mask():
    q = np.array([0.1, 0.2, np.nan, 0.4])
    np.testing.assert_array_equal(sd.q_range_mask(q, 0.15, 0.4), [False, True, False, True])
    np.testing.assert_array_equal(sd.q_range_mask(q), [True, True, False, True])
    with pytest.raises(ValueError, match="empty"):
        sd.q_range_mask(q, 0.3, 0.2)


def _result(qm, saxs, segments=None, it=None, label="f"):
    return SimpleNamespace(qmap=qm, saxs_1d=saxs, saxs_1d_segments=segments,
                           intensity_vs_time=it, label=label, frame_time=0.5,
                           multitau=None, twotime=None)


def test_saxs1d_curves_sampling_keeps_q_and_i_aligned(rng):
    qm = make_qmap(missing=())
    vals = rng.uniform(1, 2, 18)
    res = _result(qm, vals)
    c_all = sd.saxs1d_curves([res])[0]
    c2 = sd.saxs1d_curves([res], sampling=2, norm="iq2")[0]
    np.testing.assert_array_equal(c2.x, c_all.x[::2])
    np.testing.assert_allclose(c2.y, c_all.y[::2] * c_all.x[::2] ** 2, rtol=1e-14)
    with_phi = sd.saxs1d_curves([res, res], phi_lines=True, qmin=0.002, qmax=0.005)
    assert [c.kind for c in with_phi].count("phi") == 6
    assert all(np.all((c.x >= 0.002) & (c.x <= 0.005)) for c in with_phi)
    bkg = sd.saxs1d_curves([res], background=res, bkg_weight=0.5)[0]
    np.testing.assert_allclose(bkg.y, 0.5 * c_all.y, rtol=1e-14)


def test_stability_drift_of_a_linear_decline(rng):
    qm = make_qmap(n1=1, n0=40, missing=())
    base = np.linspace(10, 1, 40)
    decline = 1 - 0.3 * np.arange(6) / 5  # I falls by 30 % from the first to the last
    seg = base * decline[:, None] * rng.uniform(0.995, 1.005, (6, 40))
    st = sd.stability_analysis(seg, qm, threshold=0.1, n_groups=4)
    assert st.significant.all() and st.flagged
    np.testing.assert_allclose(st.drift, -0.3, atol=0.01)
    assert st.max_rel_change == pytest.approx(0.3, abs=0.01)
    assert st.worst_segment == 5 and st.rel_change[0] == pytest.approx(0, abs=0.01)
    steady = sd.stability_analysis(np.tile(base, (4, 1)), qm)
    assert steady.max_rel_change == 0.0 and not steady.flagged


def test_moving_average_centred_window_matches_loop(rng):
    y = rng.normal(size=23)
    for w in (1, 2, 3, 6):
        out = sdt.moving_average(y, w)
        for i in range(23):
            lo, hi = max(0, i - (w - 1) // 2), min(23, i + w // 2 + 1)
            assert out[i] == pytest.approx(y[lo:hi].mean(), rel=1e-12, abs=1e-15)
    with pytest.raises(ValueError):
        sdt.moving_average(y, 0)


def test_fft_of_a_sine_peaks_at_its_frequency():
    dt, n, f0, amp = 1e-3, 1000, 50.0, 3.0
    t = np.arange(n) * dt
    freq, mag = sdt.intensity_fft(7.0 + amp * np.sin(2 * np.pi * f0 * t), dt)
    k = int(np.argmax(mag))
    assert freq[k] == pytest.approx(f0)
    assert mag[k] == pytest.approx(amp / 2, rel=1e-9)
    assert mag[0] == pytest.approx(0.0, abs=1e-12)
    assert freq[1] == pytest.approx(1 / (n * dt))


def test_intensity_traces_time_axis_and_smoothing():
    qm = make_qmap()
    it = np.vstack([np.arange(10.0), np.arange(10.0) ** 2])
    res = _result(qm, np.ones(17), it=it)
    c = sdt.intensity_traces([res], window=3, time_axis=True)[0]
    np.testing.assert_allclose(c.x, np.arange(10) * 0.5)
    np.testing.assert_allclose(c.y, sdt.moving_average(it[1], 3))
    assert sdt.intensity_traces([_result(qm, np.ones(17))]) == []


def test_log_image_and_levels():
    img = np.array([[0.0, 1e-3], [10.0, -1.0]])
    out = sdi.log_image(img)
    np.testing.assert_allclose(out, [[-3, -3], [1, -3]])
    assert np.all(sdi.log_image(np.zeros((2, 2))) == 0)
    lo, hi = sdi.auto_levels(np.arange(101.0), 1, 99)
    assert (lo, hi) == (pytest.approx(1.0), pytest.approx(99.0))
    assert sdi.auto_levels(np.full(5, 2.0))[1] > 2.0


def test_pixel_info_q_phi_from_geometry():
    qm = make_qmap(energy=12.398419843320026)  # wavelength 1 Angstrom
    row, col = 30, 45
    info = sdi.pixel_info(qm, row + 0.4, col + 0.9)  # inside the same pixel
    dy, dx = row - qm.beam_center_y, col - qm.beam_center_x
    two_theta = math.atan(qm.pixel_size * math.hypot(dx, dy) / qm.detector_distance)
    assert info.q == pytest.approx(4 * math.pi * math.sin(two_theta / 2) / 1.0, rel=1e-12)
    assert info.phi == pytest.approx(-math.degrees(math.atan2(dy, dx)))
    assert info.dynamic_bin == qm.dynamic_roi_map[row, col]
    if info.dynamic_bin:
        assert info.dynamic_q == qm.dynamic_q[info.dynamic_bin - 1]
    assert "q=" in info.text(1.5) and "I=1.5" in info.text(1.5)
    assert not sdi.pixel_info(qm, -1, 3).inside
    assert math.isnan(sdi.pixel_info(make_qmap(energy=None), 3, 3).q)


def test_write_table_csv_ragged_atomic(tmp_path):
    out = tmp_path / "t.csv"
    sdf.write_table_csv(out, {"a": np.array([1.5, 2.0, 3.0]), "b": np.array([7.0])},
                       header=["hello"])
    lines = out.read_text().splitlines()
    assert lines[0] == "# hello"
    rows = list(csv.reader(lines[1:]))
    assert rows[0] == ["a", "b"]
    assert rows[1] == ["1.5", "7.0"] and rows[3] == ["3.0", ""]
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]
