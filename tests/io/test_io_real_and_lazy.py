"""All real production files read correctly; a large two-time view is read lazily."""

from __future__ import annotations

import tracemalloc

import h5py
import numpy as np
import pytest

from xpcsviewer.io import read_c2, read_result, read_saxs_2d, scan_folder
from xpcsviewer.io.results.reader import G2_MAX, g2_outliers
from xpcsviewer.io.results.writer import write_result
from xpcsviewer.model.result import QMap, Twotime, XpcsResult


def test_all_real_files(real_data_dir):
    folder = real_data_dir / "aps8idi_llps_saxpcs"
    files = sorted(folder.glob("*.hdf"))
    assert len(files) == 11
    for fn in files:
        r = read_result(fn)
        assert r.analysis_type == ("Multitau",) and r.layout == "nexus"
        mt = r.multitau
        assert mt.g2.shape == (61, 27) and mt.g2_err.shape == (61, 27)
        assert mt.delay_frames[0] == 1 and mt.delay_frames[-1] == 81920
        np.testing.assert_allclose(mt.tau[[0, -1]], [2e-5, 1.6384], rtol=1e-6)
        with h5py.File(fn, "r") as f:
            g = f["/xpcs/multitau/normalized_g2"][()]
            e = f["/xpcs/multitau/normalized_g2_err"][()]
        missing = (g == 0) & (e == 0)
        assert 0.01 <= missing.mean() <= 0.47  # README: "2 % to 46 %"
        present = ~missing & np.isfinite(g) & np.isfinite(e)
        # README: wild outliers up to 336 must be masked too
        np.testing.assert_array_equal(mt.valid, present & ~g2_outliers(g.astype(float), present))
        assert mt.g2[mt.valid].max() <= G2_MAX
        assert r.qmap.energy_kev == 10.945  # from the q-map, not the template metadata
        assert r.qmap.detector_distance in (7.8, 11.6)
        assert any("energy" in w for w in r.warnings)
        assert r.qmap.n_dynamic == 27 and r.qmap.n_static == len(r.saxs_1d)
        assert r.qmap.dynamic_labels()[0].startswith("q=0.0037")
        assert r.intensity_vs_time.shape == (2, 100000)
        assert r.frame_time == 2e-5
        assert "qnw1_temperature" in r.sample
        assert r.metadata["entry/user/name"] == "John Doe"
    assert read_saxs_2d(files[0]).shape == (512, 1024)
    summaries = scan_folder(folder)
    assert len(summaries) == 11 and all(s.ok and s.n_dynamic == 27 for s in summaries)


def _big_c2_file(path, n):
    mask = np.ones((4, 4), bool)
    roi = np.ones((4, 4), np.uint8)
    qm = QMap(
        roi,
        roi,
        mask,
        np.array([0.01]),
        np.array([0.0]),
        np.array([0.01]),
        np.array([0.0]),
        np.array([0]),
        np.array([0]),
        (1, 1),
        (1, 1),
        energy_kev=10.0,
    )
    t = np.arange(n, dtype=np.float64)

    def maps():  # one map, generated without a second N x N copy lying around
        c = np.exp(-np.abs(t[:, None] - t[None, :]) / 300.0, dtype=np.float64)
        c += 1.0
        yield c

    res = XpcsResult(
        path=path,
        analysis_type=("Twotime",),
        layout="nexus",
        qmap=qm,
        frame_time=0.01,
        count_time=None,
        start_time=None,
        saxs_1d=np.ones(1),
        saxs_1d_segments=None,
        intensity_vs_time=np.vstack([t, np.ones(n)]),
        twotime=Twotime(
            processed_bins=np.array([1]),
            map_names=["c2_00001"],
            n_frames=n,
            t0=0.01,
            g2_full=np.ones((1, n)),
            g2_segments=np.ones((1, 5, n // 5)),
        ),
    )
    write_result(path, res, c2_maps=maps)


@pytest.mark.slow
def test_large_c2_view_reads_only_the_view(tmp_path, monkeypatch):
    n, m = 6000, 500
    p = tmp_path / "big_results.hdf"
    _big_c2_file(p, n)
    read_elements = []
    orig = h5py.Dataset.__getitem__

    def counting(self, key):
        out = orig(self, key)
        if self.name.startswith("/xpcs/twotime/correlation_map"):
            read_elements.append(np.asarray(out).size)
        return out

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counting)
    tracemalloc.start()
    v = read_c2(p, 0, max_size=m)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    stride = -(-n // m)
    k = -(-n // stride)
    assert v.stride == stride and v.c2.shape == (k, k)
    assert sum(read_elements) == k * k  # exactly the strided hyperslab, nothing more
    view_bytes = k * k * 8
    full_bytes = n * n * 4
    assert peak < 2.5 * view_bytes, (peak, view_bytes)
    assert peak < full_bytes / 10
    tt = np.arange(n)[::stride].astype(float)
    ref = 1.0 + np.exp(-np.abs(tt[:, None] - tt[None, :]) / 300.0)
    np.testing.assert_allclose(v.c2, ref, rtol=1e-6)
