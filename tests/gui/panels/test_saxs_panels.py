"""SAXS-2D, SAXS-1D, Stability, Intensity-Time, Q-Map and Metadata tabs on the demo set:
check what is drawn (items, shapes, values), not only that nothing raised."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from xpcsviewer.views import display_image as sdi
from xpcsviewer.views import intensity as sdt
from xpcsviewer.views import saxs as sd
from xpcsviewer.views import stability as sst

pytestmark = pytest.mark.gui


def make(qtbot, context, cls):
    panel = cls(context)
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    return panel


def assert_pixels_for(pixels, values, levels):
    """Colour index of each pixel: floor(255 (v - lo) / (hi - lo)) within 0..254."""
    lo, hi = levels
    want = np.clip(np.floor((np.asarray(values, np.float64) - lo) / (hi - lo) * 255), 0, 254)
    # float32 display values: an index may sit one step off at a bin edge
    assert np.mean(pixels == want) > 0.999
    assert np.abs(pixels.astype(int) - want).max() <= 1


def curves(panel):
    return [it for it in panel.plot_items() if isinstance(it, pg.PlotDataItem)]


def test_saxs2d_image_levels_marker_and_readout(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel
    from xpcsviewer.io import read_saxs_2d

    res = demo_results["A01"]
    p = make(qtbot, sync_context, Saxs2DPanel)
    p.set_results([res])
    raw = read_saxs_2d(res.path)
    images = [it for it in p.plot_items() if isinstance(it, pg.ImageItem)]
    assert len(images) == 1
    np.testing.assert_allclose(p.data["image"], sdi.log_image(raw), rtol=1e-6)
    lo, hi = p.vmin.value(), p.vmax.value()
    assert lo < hi and lo >= sdi.log_image(raw).min() - 1e-9
    assert p.image_view.levels() == pytest.approx((lo, hi), abs=1e-4)
    # the item holds colour indices for the levels shown, made by the worker
    assert images[0].image.dtype == np.uint8
    assert_pixels_for(images[0].image, sdi.log_image(raw), p.image_view.levels())
    xs, ys = p.center_item.getData()
    assert (xs[0], ys[0]) == (res.qmap.beam_center_x + 0.5, res.qmap.beam_center_y + 0.5)
    text = p.readout_at(100.5, 60.2)
    info = sdi.pixel_info(res.qmap, 100, 60)
    assert f"q={info.q:.5f}" in text and "x=60 y=100" in text
    assert f"I={raw[100, 60]:.4g}" in text
    p.scale_combo.setCurrentText("linear")
    np.testing.assert_allclose(p.data["image"], raw, rtol=1e-6)
    assert_pixels_for(images[0].image, raw, p.image_view.levels())
    # manual levels: pixels re-made for them, and they survive a change of file
    p.auto_check.setChecked(False)
    p.vmin.setValue(0.001)
    p.vmax.setValue(0.5)
    assert p.image_view.levels() == pytest.approx((0.001, 0.5))
    assert p.image_view.pixels_current()
    assert_pixels_for(images[0].image, raw, (0.001, 0.5))
    p.set_results([demo_results["A02"]])
    assert p.image_view.levels() == pytest.approx((0.001, 0.5))
    assert_pixels_for(images[0].image, read_saxs_2d(demo_results["A02"].path), (0.001, 0.5))
    # a drag on the levels bar becomes manual levels in the spin boxes
    p.auto_check.setChecked(True)
    p.image_view.histogram.region.setRegion((0.002, 0.3))
    assert not p.auto_check.isChecked()
    assert (p.vmin.value(), p.vmax.value()) == pytest.approx((0.002, 0.3), abs=1e-4)
    assert p.image_view.pixels_current()
    s = p.get_settings()
    p2 = make(qtbot, sync_context, Saxs2DPanel)
    p2.set_settings(s)
    assert p2.get_settings() == s
    p2.set_settings({"scale": 3, "levels": [float("nan"), 1], "cmap": "nope"})  # ignored


def test_saxs1d_all_targets_norms_phi_lines_background(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.saxs1d import Saxs1DPanel

    files = [demo_results[k] for k in ("A01", "A02", "A03")]
    p = make(qtbot, sync_context, Saxs1DPanel)
    p.set_results(files)
    items = curves(p)
    assert len(items) == 3
    q, mean, _, _ = sd.saxs1d_profiles(files[1].saxs_1d, files[1].qmap)
    x, y = items[1].getOriginalDataset()
    np.testing.assert_allclose(x, q)
    np.testing.assert_allclose(y, mean)
    p.norm_combo.setCurrentIndex(1)  # I q^2
    x, y = curves(p)[1].getOriginalDataset()
    np.testing.assert_allclose(y, mean * q**2)
    assert "q\u00b2" in p.plot.getAxis("left").labelText
    p.norm_combo.setCurrentIndex(3)  # I / I(q0)
    assert curves(p)[0].getOriginalDataset()[1][0] == pytest.approx(1.0)
    p.norm_combo.setCurrentIndex(0)
    p.qmin.setValue(0.002)
    p.qmax.setValue(0.006)
    p.qrange_check.setChecked(True)
    for it in curves(p):
        xs = it.getOriginalDataset()[0]
        assert xs.min() >= 0.002 and xs.max() <= 0.006
    p.qrange_check.setChecked(False)
    # phi lines of the q-phi file: mean + one line per phi sector
    p.set_results([demo_results["B01"]])
    p.phi_check.setChecked(True)
    n_phi = int(demo_results["B01"].qmap.static_num_pts[1])
    assert len(curves(p)) == 1 + n_phi
    p.phi_check.setChecked(False)
    # background: the file itself with weight 0.25 leaves 0.75 I
    p.set_results([files[0]])
    p.bkg_edit.setText(str(files[0].path))
    p.bkg_weight.setValue(0.25)
    p.bkg_check.setChecked(True)
    _q0, m0, _, _ = sd.saxs1d_profiles(files[0].saxs_1d, files[0].qmap)
    np.testing.assert_allclose(curves(p)[0].getOriginalDataset()[1], 0.75 * m0)
    cols, header = p.data_columns()
    assert any(k.startswith("q[") for k in cols) and "weight 0.25" in header[1]


def test_stability_flags_beam_damage(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.stability import StabilityPanel

    p = make(qtbot, sync_context, StabilityPanel)
    p.set_results([demo_results["A01"], demo_results["E01"]])
    n_seg = demo_results["A01"].saxs_1d_segments.shape[0]
    assert len(curves(p)) == n_seg + 1  # the segments and the time mean (SAXS-1D)
    assert not p.result.flagged and "stable" in p.metric_label.text()
    p.set_current(1)  # E01: the beam-damage file
    assert p.result.flagged and p.result.max_rel_change > 0.3
    e01 = demo_results["E01"]
    ref = sst.stability_analysis(e01.saxs_1d_segments, e01.qmap, saxs_1d=e01.saxs_1d)
    assert p.metric_label.text() == sst.stability_summary(ref, e01.label)
    np.testing.assert_allclose(p.result.rel_change, ref.rel_change)
    assert p.applies_to([]) is not None


def test_intensity_traces_fft_and_linked_zoom(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.intensity import IntensityPanel

    files = [demo_results["A01"], demo_results["D01"]]
    p = make(qtbot, sync_context, IntensityPanel)
    p.set_results(files)
    full = list(p.p_full.listDataItems())
    assert len(full) == 2 and len(p.p_fft.listDataItems()) == 2
    assert len(p.p_zoom.listDataItems()) == 2
    x, y = full[1].getOriginalDataset()
    it = files[1].intensity_vs_time
    np.testing.assert_allclose(y, it[1])
    np.testing.assert_allclose(x, it[0] * sdt.sample_interval(files[1]))
    p.window.setValue(5)
    p.refresh()
    np.testing.assert_allclose(p.p_full.listDataItems()[1].getOriginalDataset()[1],
                               sdt.moving_average(it[1], 5))
    t_end = min(float(d.getOriginalDataset()[0][-1]) for d in full)
    a, b, c, d = (f * t_end for f in (0.1, 0.2, 0.3, 0.4))
    p.region.setRegion((a, b))
    assert p.p_zoom.viewRange()[0] == pytest.approx([a, b], abs=1e-9)
    p.p_zoom.setXRange(c, d, padding=0)
    assert p.region.getRegion() == pytest.approx((c, d), abs=1e-9)


def test_qmap_roi_maps_and_hover_labels(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.qmap import QMapPanel

    res = demo_results["B01"]
    p = make(qtbot, sync_context, QMapPanel)
    p.set_results([res])
    img = p.data["image"]
    roi = res.qmap.dynamic_roi_map
    np.testing.assert_array_equal(np.isnan(img), roi == 0)
    np.testing.assert_array_equal(img[roi > 0], roi[roi > 0])
    # shown as colour indices made in the worker; excluded pixels transparent
    pixels = p.image_view.image_item.image
    assert pixels.dtype == np.uint8
    np.testing.assert_array_equal(pixels == 255, roi == 0)
    assert_pixels_for(pixels[roi > 0], roi[roi > 0], p.image_view.levels())
    # a drag on the levels bar: exact pixels for the new levels
    p.image_view.histogram.region.setRegion((2.5, 6.5))
    assert p.image_view.pixels_current()
    assert_pixels_for(p.image_view.image_item.image[roi > 0], roi[roi > 0], (2.5, 6.5))
    r, c = np.argwhere(roi > 0)[0]
    v = int(roi[r, c])
    text = p.label_at(r + 0.5, c + 0.5)
    assert f"dynamic bin {v}: q={res.qmap.dynamic_q[v - 1]:.5f}" in text
    p.target_combo.setCurrentText("static")
    np.testing.assert_array_equal(p.data["image"][roi > 0], res.qmap.static_roi_map[roi > 0])
    p.target_combo.setCurrentText("scattering")
    assert "I=" in p.label_at(r + 0.5, c + 0.5)


def test_metadata_tree_search_and_units(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.metadata import MetadataPanel, metadata_rows

    res = demo_results["A01"]
    p = make(qtbot, sync_context, MetadataPanel)
    p.set_results([res])
    leaves = p.leaves()
    assert len(leaves) >= len(res.metadata)
    units = [u for _n, _v, u in leaves if u]
    assert units, "some metadata keys carry units"
    p.search.setText("energy")
    shown = p.leaves()
    assert 0 < len(shown) < len(leaves)
    assert any("energy" in n.lower() for n, _v, _u in shown)
    assert not any(n == "layout" for n, _v, _u in shown)  # file/layout does not match
    p.search.setText("")
    assert len(p.leaves()) == len(leaves)
    assert metadata_rows({"a/b (keV)": 1.5}) == [(["a", "b"], "1.5", "keV")]


def test_qmap_click_publishes_the_dynamic_bin(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.qmap import QMapPanel

    res = demo_results["A01"]
    p = make(qtbot, sync_context, QMapPanel)
    p.set_results([res])
    roi = res.qmap.dynamic_roi_map
    r, c = np.argwhere(roi == 3)[0]
    with qtbot.waitSignal(sync_context.sigSelectedBin, timeout=1000) as blocker:
        assert p.pick_bin(r + 0.5, c + 0.5) == 3
    assert blocker.args == [3]
    r0, c0 = np.argwhere(roi == 0)[0]
    assert p.pick_bin(r0 + 0.5, c0 + 0.5) == 0


def test_saxs2d_manual_levels_follow_the_scale(qtbot, sync_context, demo_results):
    """Manual levels mean the same intensities after log <-> linear, and small linear
    intensities keep their digits (4 significant, not 4 decimals)."""
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel
    from xpcsviewer.io import read_saxs_2d

    res = demo_results["A01"]
    p = make(qtbot, sync_context, Saxs2DPanel)
    p.set_results([res])
    p.auto_check.setChecked(False)
    p.vmin.setValue(-4.5)
    p.vmax.setValue(-1.0)
    p.scale_combo.setCurrentText("linear")
    assert (p.vmin.value(), p.vmax.value()) == pytest.approx((10 ** -4.5, 0.1), rel=1e-6)
    assert p.image_view.levels() == pytest.approx((10 ** -4.5, 0.1), rel=1e-6)
    assert_pixels_for(p.image_view.image_item.image, read_saxs_2d(res.path),
                      p.image_view.levels())
    p.scale_combo.setCurrentText("log")
    assert (p.vmin.value(), p.vmax.value()) == pytest.approx((-4.5, -1.0), abs=1e-9)


_SUPER = str.maketrans("\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079",
                       "-0123456789")


def _tick_labels(ax) -> list[str]:
    """The labels an axis draws for its current range."""
    a, b = sorted(ax.range)
    size = ax.size().height() if ax.orientation in ("left", "right") else ax.size().width()
    out = []
    for sp, vals in ax.tickValues(a, b, size):
        vis = [v for v in vals if a <= v <= b]
        out += [s for s in ax.tickStrings(vis, ax.scale, sp or 1) if s]
    return out


def _label_value(s: str) -> float:
    """'0.002' -> 0.002; '10\u207b\u2075' -> 1e-5; '2\u00b710\u00b9' -> 20."""
    if "10" in s and s.translate(_SUPER) != s:
        mant, _, power = s.rpartition("10")
        mant = mant.rstrip("\u00b7") or "1"
        return float(mant) * 10.0 ** int(power.translate(_SUPER))
    return float(s)


@pytest.mark.parametrize("lo, hi", [(None, None), (3e-5, 3e-3), (0.5, 50.0), (2e-6, 20.0),
                                    (0.996, 1.004)])
def test_saxs1d_axis_labels_share_one_format(qtbot, sync_context, demo_results, lo, hi):
    """Issue 33 (8b): one log axis wrote "0.0001" beside "9\u00b710\u207b\u2075" and "2"
    beside "10\u00b9": each axis now has one format, plain decimals or powers of ten."""
    from xpcsviewer.gui.panels.saxs1d import Saxs1DPanel

    p = make(qtbot, sync_context, Saxs1DPanel)
    p.set_results([demo_results["A01"]])
    if lo is not None:  # the demo's I(q) zoomed out (or in) across a format boundary
        p.plot.setYRange(np.log10(lo), np.log10(hi), padding=0)
    qtbot.wait(50)
    for name in ("left", "bottom"):
        labels = _tick_labels(p.plot.getAxis(name))
        assert len(labels) >= 2, (name, labels)
        powers = ["10" in s and s.translate(_SUPER) != s for s in labels]
        assert all(powers) or not any(powers), (name, labels)
        assert len(set(labels)) == len(labels), (name, labels)  # not 1, 1, 1 near 1
        if name == "left" and lo is not None:
            values = [_label_value(s) for s in labels]
            assert all(lo * 0.999 <= v <= hi * 1.001 for v in values), labels
    if lo is not None:
        plain = hi < 1e4 and lo >= 1e-4
        assert plain == (not any("10" in s and s.translate(_SUPER) != s
                                 for s in _tick_labels(p.plot.getAxis("left"))))


def test_saxs2d_colour_bar_spans_the_levels_in_the_boxes(qtbot, sync_context, demo_results):
    """Issue 49 (9): the greyed min / max boxes disagreed with the colour bar, whose scale
    spanned the whole histogram (plus padding), not the levels the colours use."""
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel

    p = make(qtbot, sync_context, Saxs2DPanel)
    p.set_results([demo_results["A01"]])

    def bar_range():
        return tuple(p.image_view.histogram.vb.viewRange()[1])

    lo, hi = p.vmin.value(), p.vmax.value()
    assert not p.vmin.isEnabled()  # auto levels: greyed boxes
    assert bar_range() == pytest.approx((lo, hi), abs=1e-3)
    assert p.image_view.levels() == pytest.approx((lo, hi), abs=1e-4)
    p.scale_combo.setCurrentText("linear")
    assert bar_range() == pytest.approx((p.vmin.value(), p.vmax.value()), rel=1e-3)
    # typed levels: the bar follows them
    p.auto_check.setChecked(False)
    p.vmax.setValue(0.5)
    assert bar_range() == pytest.approx((p.vmin.value(), 0.5), rel=1e-3)


def test_saxs2d_opens_on_the_region_of_data_with_a_way_back(qtbot, sync_context, demo_results):
    """Issue 49 (9): the Rigaku 3M image (1676 x 2100, q-bins in ~120 pixels) was shown
    whole around a spot of data."""
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel

    res = demo_results["S02"]
    roi = (np.asarray(res.qmap.dynamic_roi_map) > 0) & np.asarray(res.qmap.mask, bool)
    ys, xs = np.nonzero(roi)
    p = make(qtbot, sync_context, Saxs2DPanel)
    p.set_results([res])
    (x0, x1), (y0, y1) = p.plot.getViewBox().viewRange()
    # every pixel of the q-bins in view, and the view a small part of the detector
    assert x0 <= xs.min() and x1 >= xs.max() + 1 and y0 <= ys.min() and y1 >= ys.max() + 1
    h, w = res.qmap.shape
    assert (x1 - x0) * (y1 - y0) < 0.05 * h * w
    p.view_all_btn.click()
    (x0, x1), (y0, y1) = p.plot.getViewBox().viewRange()
    assert x0 <= 0 and x1 >= w and y0 <= 0 and y1 >= h
    # a detector filled with bins is framed whole, as before
    p.set_results([demo_results["A01"]])
    (x0, x1), (y0, y1) = p.plot.getViewBox().viewRange()
    assert x0 <= 0 and x1 >= demo_results["A01"].qmap.shape[1]
