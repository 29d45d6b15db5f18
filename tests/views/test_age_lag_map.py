"""The age x lag map as an image (issue 35): each cell is the weighted mean of the
entries whose age falls in its column at the nearest stored lag; bands stay inside the
run."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.ages.age_lag import AgeLagLevel, AgeLagMap, entry_ages, from_full_maps
from xpcsviewer.views.age_lag_map import age_lag_bands, age_lag_image


def _brute(amap: AgeLagMap, img, row: int, col: int) -> float:
    """Weighted mean of the entries at the row's nearest stored lag in the column."""
    ft = amap.frame_time
    yc = 0.5 * (np.log10(img.lag_edges[row]) + np.log10(img.lag_edges[row + 1]))
    lag = img.lags[np.argmin(np.abs(np.log10(img.lags) - yc))] / ft
    lo, hi = img.age_edges[col], img.age_edges[col + 1]
    s = w = 0.0
    for lv in amap.levels:
        ages = entry_ages(lv) * ft
        for j in np.flatnonzero(lv.lag == lag):
            for i in range(lv.t1.size):
                c, wt = lv.c[0, i, j], lv.weight[i, j]
                if np.isfinite(c) and wt > 0 and lo <= ages[i, j] < hi:
                    s, w = s + wt * c, w + wt
    return s / w if w else np.nan


def test_cells_are_the_entries_of_their_column():
    n, ft = 24, 0.5
    i, j = np.mgrid[:n, :n]
    c2 = 1.0 + 0.01 * (i + j) + 0.3 * np.exp(-(j - i) / 4.0)
    amap = from_full_maps([np.triu(c2)], [2], ft)
    img = age_lag_image(amap, 0, n_cols=7, n_rows=40)
    assert img.c.shape == (40, 7) and img.dq == 2
    np.testing.assert_allclose(img.age_edges[[0, -1]], [-0.5 * ft, (n - 0.5) * ft])
    for row in (0, 5, 17, 39):
        for col in range(7):
            ref = _brute(amap, img, row, col)
            if np.isfinite(ref):
                assert img.c[row, col] == pytest.approx(ref, rel=1e-12), (row, col)
    # g2 over all ages: the mean of each lag's entries (every pair weighs 1)
    lag = 3
    assert img.g2[lag - 1] == pytest.approx(np.mean(np.diagonal(c2, lag)), rel=1e-12)


def test_wide_blocks_fill_the_columns_they_cover():
    """A level of 8-frame blocks: columns narrower than a block take the block's entry."""
    n = 64
    t1 = np.arange(0, n - 8, 8, dtype=np.float64)
    lag = np.array([8.0, 16.0])
    c = np.arange(t1.size * 2, dtype=np.float64).reshape(1, t1.size, 2) + 1.0
    lv = AgeLagLevel(width=8, t1=t1, lag=lag, c=c, weight=np.full((t1.size, 2), 64.0))
    amap = AgeLagMap(bins=np.array([1]), n_frames=n, frame_time=1.0, levels=(lv,))
    img = age_lag_image(amap, 0, n_cols=64, n_rows=2)
    row = img.c[0]  # lag 8: entries at ages t1 + 3.5 + 4, each block 8 frames wide
    covered = np.isfinite(row)
    assert covered.sum() >= 8 * (t1.size - 1)
    centres = 0.5 * (img.age_edges[:-1] + img.age_edges[1:])
    for k in np.flatnonzero(covered):
        nearest = int(np.argmin(np.abs(t1 + 7.5 - centres[k])))
        assert row[k] == c[0, nearest, 0]


@pytest.mark.parametrize("shown", ["age", "t1", "both"])
def test_bands_stay_inside_the_run(shown):
    t_end = 10.0
    bands = age_lag_bands(np.array([0.0, 4.0, 8.0]), np.array([2.0, 6.0, 10.0]), t_end,
                          0.01, 12.0, shown)
    assert len(bands) == (6 if shown == "both" else 3)
    for b in bands:
        x, y = b.polygon[:, 0], b.polygon[:, 1]
        assert np.all(x >= 0.5 * y - 1e-12) and np.all(x <= t_end - 0.5 * y + 1e-12)
        if b.way == "age":
            lo, hi = [(0.0, 2.0), (4.0, 6.0), (8.0, 10.0)][b.window]
            assert np.all((x >= lo - 1e-12) & (x <= hi + 1e-12))
