"""The age x lag form of a full two-time map reads the same entries as the map."""

import numpy as np
import pytest

from xpcsviewer.compute.ages.age_lag import entry_ages, entry_t1, from_full_maps


def test_full_map_entries_are_the_upper_triangle():
    rng = np.random.default_rng(3)
    n = 7
    m = rng.normal(size=(n, n))
    amap = from_full_maps([m, 2 * m], [3, 5], frame_time=0.5)
    (lv,) = amap.levels
    for i in range(n):
        for k in range(n):
            if i + k < n:
                assert lv.c[0, i, k] == m[i, i + k]
                assert lv.c[1, i, k] == 2 * m[i, i + k]
                assert lv.weight[i, k] == 1.0
            else:
                assert np.isnan(lv.c[0, i, k]) and lv.weight[i, k] == 0.0
    assert entry_ages(lv)[2, 4] == 2 + 4 / 2
    assert entry_t1(lv)[2, 4] == 2
    assert amap.bins.tolist() == [3, 5] and amap.n_frames == n


def test_full_maps_of_different_sizes_are_refused():
    with pytest.raises(ValueError, match="must all be"):
        from_full_maps([np.zeros((3, 3)), np.zeros((4, 4))], [1, 2], 1.0)
