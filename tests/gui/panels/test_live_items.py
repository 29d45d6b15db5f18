"""Issue 33 (5/6): the Live tab's first update makes its plot items a few per turn of
the event loop, not all in one go (that first update was the longest GUI gap)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from xpcsviewer.gui.panels.live import MAX_CURVES, NEW_ITEMS_PER_TURN


def _view(n_bins: int = 12, n_tau: int = 20):
    tau = np.logspace(-3, 0, n_tau)
    g2 = 1.0 + 0.2 * np.exp(-tau[:, None] / np.linspace(0.01, 0.1, n_bins)[None, :])
    return SimpleNamespace(
        g2=g2, tau=tau, valid=np.ones_like(g2, bool), q=np.linspace(0.001, 0.01, n_bins),
        fit_t=tau, fit_curves={j + 1: g2[:, j] for j in range(n_bins)})


def test_first_update_makes_items_a_few_per_turn(window, qtbot):
    panel = window.panels["live"]
    v = _view()
    panel.last_update = SimpleNamespace(view=v)
    assert panel._draw_curves(v)  # more to make
    assert len(panel.g2_items) + len(panel.fit_items) == NEW_ITEMS_PER_TURN
    panel._more_items_later()
    qtbot.waitUntil(lambda: len(panel.fit_items) == MAX_CURVES, timeout=5000)
    assert len(panel.g2_items) == MAX_CURVES
    # every item holds this update's data, including those made on later turns
    for j, item in panel.g2_items.items():
        np.testing.assert_array_equal(item.yData, v.g2[:, j])
    for j, item in panel.fit_items.items():
        np.testing.assert_array_equal(item.yData, v.fit_curves[j + 1])
    assert not panel._draw_curves(v)  # nothing left: a later update makes none


def test_a_newer_update_stops_the_old_one_making_items(window, qtbot):
    panel = window.panels["live"]
    old, new = _view(), _view()
    panel.last_update = SimpleNamespace(view=old)
    panel._draw_curves(old)
    panel._more_items_later()
    panel.last_update = SimpleNamespace(view=new)  # arrived before the next turn
    qtbot.wait(50)
    assert len(panel.g2_items) + len(panel.fit_items) == NEW_ITEMS_PER_TURN


def test_a_problem_with_the_source_heads_the_status(window):
    """Issue 34 (5): a run that ended on a truncated, replaced or re-created source says
    so in words first, and that the result is partial (the note follows)."""
    panel = window.panels["live"]
    up = SimpleNamespace(final=True, frames=512, expected=None, lag_s=0.0, lag_frames=0,
                         frame_rate_hz=500.0, writer_rate_hz=500.0, bins=None,
                         fit_error=None, latency_s=None, end="truncated",
                         problem="truncated", note="raw.h5 was truncated to 16 bytes")
    text = panel._status_text(up)
    assert text.startswith("Finished (the source was truncated; partial result): 512 frames")
    assert text.endswith("raw.h5 was truncated to 16 bytes")
