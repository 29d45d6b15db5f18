"""Colour maps by name: pyqtgraph's own, or matplotlib's registry (never pyplot)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")


@pytest.mark.parametrize("name", ["tab20b", "jet", "hot", "viridis"])
def test_colormap_matches_matplotlib(qapp, name):
    import matplotlib

    from xpcsviewer.gui.widgets import colormap

    x = np.linspace(0.0, 1.0, 101)
    got = colormap(name).map(x, mode="float")[:, :3]
    want = matplotlib.colormaps[name](x)[:, :3]
    # pyqtgraph interpolates between its stops: within a couple of 8-bit steps,
    # except across tab20b's steps (a listed map), where a sample may fall either side
    close = np.abs(got - want).max(axis=1) < 0.02
    assert close.mean() > (0.8 if name == "tab20b" else 0.99)


def test_colormap_is_cached_and_gray_is_linear(qapp):
    from xpcsviewer.gui.widgets import colormap

    assert colormap("tab20b") is colormap("tab20b")
    g = colormap("gray").map(np.array([0.0, 0.5, 1.0]), mode="float")[:, 0]
    np.testing.assert_allclose(g, [0.0, 0.5, 1.0], atol=0.01)
