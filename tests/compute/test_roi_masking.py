"""Wedge/ring ROI integration and mask shapes against direct NumPy over the pixels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xpcsviewer.compute.detector import masking
from xpcsviewer.compute.detector.qmap import compute_qmap
from xpcsviewer.compute.detector.roi import SectorRoi, integrate_roi, q_at_radius, roi_pixels

SHAPE = (57, 83)
BCX, BCY = 30.3, 25.6


@pytest.fixture(scope="module")
def maps():
    q, phi = compute_qmap(SHAPE, 10.0, 5.0, 150e-6, BCX, BCY)
    rng = np.random.default_rng(7)
    img = rng.gamma(2.0, 1.0, SHAPE)
    mask = rng.random(SHAPE) > 0.15
    return q, phi, img, mask


def _selected_loop(roi, phi, mask):
    """The ROI's pixels by a per-pixel test written out directly."""
    sel = np.zeros(SHAPE, bool)
    for r in range(SHAPE[0]):
        for c in range(SHAPE[1]):
            rho = math.hypot(c - BCX, r - BCY)
            d = (phi[r, c] - roi.phi_start) % 360.0
            sel[r, c] = (roi.r_min <= rho <= roi.r_max and d <= roi.phi_span and mask[r, c])
    return sel


@pytest.mark.parametrize("roi", [
    SectorRoi("wedge", 5.0, 40.0, phi_start=-30.0, phi_span=60.0, n_bins=12),
    SectorRoi("wedge", 0.0, 70.0, phi_start=160.0, phi_span=50.0, n_bins=7),  # wraps +-180
    SectorRoi("ring", 10.0, 22.5, n_bins=24),
    SectorRoi("ring", 15.0, 30.0, phi_start=100.0, phi_span=120.0, n_bins=9),
])
def test_roi_integration_equals_direct_sum(maps, roi):
    q, phi, img, mask = maps
    sel = _selected_loop(roi, phi, mask)
    np.testing.assert_array_equal(roi_pixels(roi, SHAPE, BCX, BCY, phi, mask), sel)
    prof = integrate_roi(img, roi, q, phi, BCX, BCY, mask)
    # every selected pixel is in exactly one bin: the sums add up to the direct sum
    assert prof.counts.sum() == sel.sum() > 0
    np.testing.assert_allclose(np.nansum(prof.intensity * prof.counts), img[sel].sum(),
                               rtol=1e-12)
    # each bin: the plain mean of the selected pixels whose q (phi) falls in it
    if roi.kind == "wedge":
        x = q
        lo, hi = q[sel].min(), q[sel].max()
    else:
        x = roi.phi_start + (phi - roi.phi_start) % 360.0
        lo, hi = roi.phi_start, roi.phi_start + roi.phi_span
    edges = np.linspace(lo, hi, roi.n_bins + 1)
    for k in range(roi.n_bins):
        last = k == roi.n_bins - 1
        in_bin = sel & (x >= edges[k]) & ((x <= edges[k + 1]) if last else (x < edges[k + 1]))
        assert prof.counts[k] == in_bin.sum()
        if in_bin.any():
            assert prof.intensity[k] == pytest.approx(img[in_bin].mean(), rel=1e-12)
        else:
            assert np.isnan(prof.intensity[k])
    np.testing.assert_allclose(prof.x, 0.5 * (edges[1:] + edges[:-1]), rtol=1e-12)


def test_q_at_radius_matches_the_qmap(maps):
    q, _phi, _img, _mask = maps
    r = np.hypot(np.arange(SHAPE[1]) - BCX, 0 - BCY)
    np.testing.assert_allclose(q_at_radius(r, 10.0, 5.0, 150e-6), q[0], rtol=1e-13)


def test_bad_rois_are_refused():
    with pytest.raises(ValueError):
        SectorRoi("pie", 1, 2)
    with pytest.raises(ValueError):
        SectorRoi("ring", 5, 5)
    with pytest.raises(ValueError):
        SectorRoi("wedge", 1, 5, phi_span=0)


# --------------------------------------------------------------------- mask shapes
def _centres():
    r, c = np.indices(SHAPE, dtype=float)
    return c + 0.5, r + 0.5  # display coordinates of the pixel centres


def test_rectangle_circle_ellipse_line_against_formulas():
    x, y = _centres()
    np.testing.assert_array_equal(
        masking.rectangle(SHAPE, 10.2, 5.7, 20.0, 9.5),
        (x >= 10.2) & (x <= 30.2) & (y >= 5.7) & (y <= 15.2))
    a = np.deg2rad(30.0)  # rotated about its corner (x0, y0), as a pyqtgraph RectROI
    u = (x - 40) * np.cos(a) + (y - 10) * np.sin(a)
    v = -(x - 40) * np.sin(a) + (y - 10) * np.cos(a)
    np.testing.assert_array_equal(masking.rectangle(SHAPE, 40, 10, 25, 8, 30.0),
                                  (u >= 0) & (u <= 25) & (v >= 0) & (v <= 8))
    np.testing.assert_array_equal(masking.circle(SHAPE, 20.5, 30.0, 9.3),
                                  (x - 20.5) ** 2 + (y - 30.0) ** 2 <= 9.3**2)
    b = np.deg2rad(-50.0)
    u = (x - 50) * np.cos(b) + (y - 28) * np.sin(b)
    v = -(x - 50) * np.sin(b) + (y - 28) * np.cos(b)
    np.testing.assert_array_equal(masking.ellipse(SHAPE, 50, 28, 15, 6, -50.0),
                                  (u / 15) ** 2 + (v / 6) ** 2 <= 1)
    # a line of width w: distance to the segment <= w / 2
    x0, y0, x1, y1, w = 5.0, 50.0, 70.0, 12.0, 3.0
    t = np.clip(((x - x0) * (x1 - x0) + (y - y0) * (y1 - y0)) / ((x1 - x0) ** 2 + (y1 - y0) ** 2),
                0, 1)
    d2 = (x - (x0 + t * (x1 - x0))) ** 2 + (y - (y0 + t * (y1 - y0))) ** 2
    np.testing.assert_array_equal(masking.line(SHAPE, x0, y0, x1, y1, w), d2 <= (w / 2) ** 2)


def test_polygon_against_a_per_pixel_ray_cast():
    verts = [(5.0, 5.0), (60.0, 8.0), (40.0, 30.0), (70.0, 50.0), (10.0, 45.0)]
    got = masking.polygon(SHAPE, verts)
    want = np.zeros(SHAPE, bool)
    for r in range(SHAPE[0]):
        for c in range(SHAPE[1]):
            px, py = c + 0.5, r + 0.5
            inside = False
            for i in range(len(verts)):
                (xa, ya), (xb, yb) = verts[i - 1], verts[i]
                if (ya > py) != (yb > py) and px < (xb - xa) * (py - ya) / (yb - ya) + xa:
                    inside = not inside
            want[r, c] = inside
    np.testing.assert_array_equal(got, want)
    assert masking.polygon(SHAPE, verts[:2]).sum() == 0


def test_threshold_and_history():
    img = np.arange(12.0).reshape(3, 4)
    img[0, 0] = np.nan
    bad = masking.threshold(img, 2.0, 9.0)
    np.testing.assert_array_equal(bad, ~np.isfinite(img) | (img < 2) | (img > 9))
    init = np.ones((3, 4), bool)
    init[2, 3] = False  # a pixel the file never had
    h = masking.MaskHistory(init)
    assert not h.can_undo and not h.can_redo
    assert h.exclude(bad)
    after_threshold = h.current.copy()
    assert not h.exclude(bad)  # no change, no step
    eraser = np.zeros((3, 4), bool)
    eraser[2, :] = True
    assert h.include(eraser)  # gives back row 2, but not the pixel the file lacked
    assert h.current[2, :3].all() and not h.current[2, 3]
    assert h.undo() and np.array_equal(h.current, after_threshold)
    assert h.redo() and h.current[2, 0]
    assert h.reset() and np.array_equal(h.current, init) and h.can_undo
    assert h.undo() and h.n_masked == int((init & ~h.current).sum())
    with pytest.raises(ValueError):
        h.set(np.ones((2, 2), bool))
    shapes = [masking.Shape("circle", {"cx": 1.0, "cy": 1.0, "radius": 1.0}),
              masking.Shape("rectangle", {"x0": 3, "y0": 0, "width": 1, "height": 3})]
    np.testing.assert_array_equal(masking.rasterize((3, 4), shapes),
                                  shapes[0].select((3, 4)) | shapes[1].select((3, 4)))
    with pytest.raises(ValueError, match="unknown shape"):
        masking.Shape("star").select((3, 4))


def test_integrate_rois_uses_the_files_geometry_and_mask(maps):
    """The worker job integrate_rois: q and phi from a QMap's geometry, its mask applied."""
    from types import SimpleNamespace

    from xpcsviewer.compute.detector.roi import integrate_rois

    q, phi, img, mask = maps
    qm = SimpleNamespace(energy_kev=10.0, detector_distance=5.0, pixel_size=150e-6,
                         beam_center_x=BCX, beam_center_y=BCY, mask=mask)
    rois = [SectorRoi("wedge", 5.0, 40.0, -30.0, 60.0, 12, "W1"),
            SectorRoi("ring", 10.0, 22.5, n_bins=24, name="R2")]
    got = integrate_rois(img, rois, qm)
    for g, roi in zip(got, rois, strict=True):
        ref = integrate_roi(img, roi, q, phi, BCX, BCY, mask)
        np.testing.assert_allclose(g.intensity, ref.intensity, equal_nan=True)
        np.testing.assert_array_equal(g.counts, ref.counts)
    with pytest.raises(ValueError, match="energy"):
        integrate_rois(img, rois, SimpleNamespace(**{**vars(qm), "energy_kev": None}))


def test_roi_profiles_table_and_figure(maps, tmp_path):
    from xpcsviewer.export.roi_profiles import write_roi_figure, write_roi_table

    q, phi, img, mask = maps
    rois = [SectorRoi("wedge", 5.0, 40.0, -30.0, 60.0, 12, "W1"),
            SectorRoi("ring", 10.0, 22.5, n_bins=24, name="R2")]
    profiles = [integrate_roi(img, r, q, phi, BCX, BCY, mask) for r in rois]
    csv = write_roi_table(tmp_path / "rois.csv", profiles, "demo")
    lines = [ln for ln in open(csv).read().splitlines() if not ln.startswith("#")]
    head = lines[0].split(",")
    assert "W1: q (1/A)" in head and "R2: phi (deg)" in head and "W1: I" in head
    data = np.genfromtxt(lines[1:], delimiter=",")
    col = head.index("R2: I")
    np.testing.assert_allclose(data[:24, col], profiles[1].intensity, equal_nan=True)
    png = write_roi_figure(tmp_path / "rois.png", profiles, "demo")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_mask_file_round_trip_and_no_overwrite(tmp_path):
    import h5py

    from xpcsviewer.io.masks import read_mask, write_mask_file

    m = np.random.default_rng(3).random((9, 13)) > 0.3
    p = write_mask_file(tmp_path / "mask.hdf", m, source="x_results.hdf")
    np.testing.assert_array_equal(read_mask(p, (9, 13)), m)
    with h5py.File(p, "r") as f:  # pySimpleMask's key, uint8, 1 = valid
        assert f["qmap/mask"].dtype == np.uint8
        np.testing.assert_array_equal(f["qmap/mask"][()], m.astype(np.uint8))
        np.testing.assert_array_equal(f["mask"][()], m.astype(np.uint8))
    with pytest.raises(FileExistsError):
        write_mask_file(p, ~m)
    np.testing.assert_array_equal(read_mask(p, (9, 13)), m)


def test_history_commit_of_a_worker_step_is_refused_when_stale():
    init = np.ones((4, 5), bool)
    h = masking.MaskHistory(init)
    v0 = h.version
    packed = np.packbits(h.current, axis=None).tobytes()
    new = init.copy()
    new[1, 1:3] = False
    other = init.copy()
    other[3, 4] = False
    assert h.exclude(~other)  # the user masked something else meanwhile
    assert not h.commit(new, packed, v0)  # the worker's step is stale
    assert h.n_masked == 1
    packed = np.packbits(h.current, axis=None).tobytes()
    assert h.commit(new & other, packed, h.version)
    assert h.n_masked == 3 and h.undo() and h.n_masked == 1
