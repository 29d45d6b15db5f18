"""The demo's two-time files carry the two-time maps of 16 pixel groups (docs/ages.md)."""

from __future__ import annotations

import h5py
import numpy as np

from xpcsviewer.io.results.reader import read_c2
from xpcsviewer.io.results.twotime_groups import has_twotime_groups, read_twotime_groups
from xpcsviewer.synthetic.demo import check_demo_file, write_demo
from xpcsviewer.synthetic.demo_specs import DEMO_SPECS


def test_the_demo_twotime_specs_ask_for_groups():
    tt = {s["name"]: s.get("twotime", {}) for s in DEMO_SPECS}
    assert tt["C01_ageing_gel_twotime"]["pixel_groups"] == 16
    assert tt["C02_stationary_gel_twotime"]["pixel_groups"] == 16


def test_demo_c01_has_the_groups(tmp_path):
    name = "C01_ageing_gel_twotime"
    write_demo(tmp_path, seed=0, names=[name])
    path = tmp_path / f"{name}_results.hdf"
    with h5py.File(path, "r") as f:
        assert has_twotime_groups(f)
        n_pix = np.bincount(np.asarray(f["/xpcs/qmap/dynamic_roi_map"]).ravel()
                            * (np.asarray(f["/xpcs/qmap/mask"]).ravel() > 0))
    g = read_twotime_groups(path)
    assert g.bins.tolist() == [1, 2, 3, 4] and g.n_groups == 16
    assert g.tile_px == 8 and g.seed == 0
    # every pixel of a bin is in one group
    np.testing.assert_array_equal(g.pixels.sum(axis=0), n_pix[g.bins])
    # the groups' maps are of the same frames as the bin's map: bin 4 (2880 pixels) is
    # the pixel-weighted mean of its groups' to 10 per cent of C - 1 on average, and the
    # two go together (correlation 0.76 seen: each group normalises by its own frame
    # means of a few low-count pixels per static bin, which adds noise the map lacks)
    c2 = read_c2(path, 3, max_size=500).c2.astype(np.float64)
    iu = np.triu_indices(c2.shape[0], 1)
    w = g.pixels[:, 3] / g.pixels[:, 3].sum()
    mean = np.einsum("g,gij->ij", w, g.maps[3])[iu]
    assert np.abs(np.mean(mean - c2[iu])) < 0.1 * np.mean(np.abs(c2[iu] - 1))
    assert np.corrcoef(mean, c2[iu])[0, 1] > 0.6
    # a demo file without them is not complete (simulated again, not reused)
    i = next(k for k, s in enumerate(DEMO_SPECS) if s["name"] == name)
    assert check_demo_file(tmp_path, DEMO_SPECS[i], i, 0) is None
    with h5py.File(path, "r+") as f:
        del f["/xpcs/twotime/groups/c2_00002"]
    assert check_demo_file(tmp_path, DEMO_SPECS[i], i, 0) == "two-time pixel-group maps are missing"
