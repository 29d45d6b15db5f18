"""Min/max envelope against a direct loop."""

from __future__ import annotations

import numpy as np

from xpcsviewer.views.decimate import envelope


def test_envelope_keeps_every_runs_extremes():
    rng = np.random.default_rng(0)
    n = 100_003
    x = np.cumsum(rng.random(n))
    y = rng.standard_normal(n)
    y[12345] = 50.0  # a spike must survive
    y[500:900] = np.nan
    xe, ye = envelope(x, y, 1000)
    assert xe.size == ye.size == 2000
    edges = np.linspace(0, n, 1001).astype(int)
    for k in range(1000):
        seg = y[edges[k]:edges[k + 1]]
        lo, hi = ye[2 * k: 2 * k + 2].min(), ye[2 * k: 2 * k + 2].max()
        if np.isfinite(seg).any():
            assert lo == np.nanmin(seg) and hi == np.nanmax(seg)
    assert np.nanmax(ye) == 50.0 and x[12345] in xe
    assert np.all(np.diff(xe) >= 0)  # still in x order


def test_short_curves_unchanged():
    x, y = np.arange(10.0), np.arange(10.0) ** 2
    xe, ye = envelope(x, y, 100)
    np.testing.assert_array_equal(xe, x)
    np.testing.assert_array_equal(ye, y)
