"""Issue 33 item 3 in the tabs: Stability and SAXS-1D draw one file's I(q) on one
stated scale; the verdict line says what it measures."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from xpcsviewer.io import read_result

pytestmark = pytest.mark.gui

B0147 = "aps8idi_llps_saxpcs/Average_B0147_S3_7_300C10p_att00_Rq0_00001_00200_results.hdf"


def _panel(qtbot, context, cls, results):
    p = cls(context)
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    p.set_results(results)
    return p


def _lines(panel):
    return {it.name(): it.getOriginalDataset()
            for it in panel.plot_items() if isinstance(it, pg.PlotDataItem)}


def _left(panel):
    return panel.plot.getAxis("left").labelText


def _both_tabs(qtbot, context, res):
    from xpcsviewer.gui.panels.saxs1d import Saxs1DPanel
    from xpcsviewer.gui.panels.stability import StabilityPanel

    stab = _panel(qtbot, context, StabilityPanel, [res])
    saxs = _panel(qtbot, context, Saxs1DPanel, [res])
    return stab, saxs


def _check_one_scale(stab, saxs, res):
    lines = _lines(stab)
    q, mean = lines["time mean (SAXS-1D)"]
    q1, mean1 = _lines(saxs)[res.label]
    np.testing.assert_allclose(q, q1)
    np.testing.assert_allclose(mean, mean1, rtol=1e-12, equal_nan=True)  # same curve
    segs = np.array([lines[f"segment {s + 1}"][1] for s in range(len(lines) - 1)])
    ok = np.isfinite(mean) & np.all(np.isfinite(segs), axis=0)
    # the segments' mean lies on the SAXS-1D curve: one scale for both tabs
    assert segs[:, ok].mean(axis=0).sum() / mean[ok].sum() == pytest.approx(1, rel=0.02)
    assert _left(stab).startswith(_left(saxs))


@pytest.mark.realdata
def test_b0147_stability_and_saxs1d_on_one_scale(qtbot, sync_context, real_data_dir):
    res = read_result(real_data_dir / B0147)
    stab, saxs = _both_tabs(qtbot, sync_context, res)
    _check_one_scale(stab, saxs, res)
    k = stab.result.scale
    assert 700 < k < 1100  # the file's segment rows are ~890x its scattering_1d
    assert f"\u00f7 {k:.4g}" in _left(stab)
    assert f"divided by {k:.4g}" in stab.scale_label.text()
    text = stab.metric_label.text()
    assert "stable" in text and "beam damage" not in text and not stab.result.flagged
    assert "standard errors" in stab.metric_label.toolTip()


def test_demo_e01_one_scale_and_flagged(qtbot, sync_context, demo_results):
    res = demo_results["E01"]
    stab, saxs = _both_tabs(qtbot, sync_context, res)
    _check_one_scale(stab, saxs, res)
    assert stab.result.scale == 1.0 and _left(stab) == _left(saxs)
    assert stab.result.flagged and "beam damage" in stab.metric_label.text()
    cols, header = stab.data_columns()
    assert "I_time_mean" in cols and "drift per q group" in header[2]
