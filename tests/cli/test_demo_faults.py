"""``xpcsviewer demo``'s acquisitions with planted faults: raw files (dense HDF5 among them)
and q-maps in OUT/raw, their faults in truth.json in the findings contract with the
``inspect`` command that finds them, results correlated from them (dense frames on the
dense path), reused by a second run.

Small stand-ins of the demo's R01-R03 (DEMO_SPECS replaced, as test_demo_sparse.py
does): a dense HDF5 file and a Rigaku 2-bit file of a few hundred frames.
"""

from __future__ import annotations

import copy
import json

import h5py
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.multitau.photons import available
from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic import demo as demo_mod
from xpcsviewer.synthetic.demo_faults import FAULT_SPECS

pytestmark = pytest.mark.skipif(not available(), reason="the photon correlator needs numba")


def _small(spec, n_frames=300):
    s = copy.deepcopy(spec)
    s["name"] = s["name"].replace("_faults", "_small")
    s["acquisition"]["n_frames"] = n_frames
    f = s["faults"]
    f["cosmics"] = [c for c in f["cosmics"] if c["frame"] < n_frames] or [
        {**f["cosmics"][0], "frame": 50}]
    f["empty_frames"] = [[100, 119]]
    f["at_cap"] = [{**f["at_cap"][0], "frames": [150, 249]}]
    f.pop("modulation")
    return s


@pytest.fixture(scope="module")
def specs():
    return [_small(FAULT_SPECS[0]), _small(FAULT_SPECS[1])]


@pytest.fixture(scope="module")
def faulty_demo(tmp_path_factory, specs):
    from unittest import mock

    out = tmp_path_factory.mktemp("demo_faults")
    with mock.patch.object(demo_mod, "DEMO_SPECS", specs):
        assert main(["demo", "--no-gui", "--quiet", "--out", str(out)]) == 0
    return out


def test_truth_lists_the_planted_faults(faulty_demo, specs):
    doc = json.loads((faulty_demo / "raw" / "truth.json").read_text())
    assert doc["demo_version"] == demo_mod.DEMO_VERSION >= 3
    entries = {e["name"]: e for e in doc["acquisitions"]}
    for spec in specs:
        e = entries[spec["name"]]
        kinds = sorted(t["kind"] for t in e["faults"])
        f = spec["faults"]
        assert kinds == sorted(["hot_pixel"] * len(f["hot_pixels"])
                               + ["dead_pixel"] * len(f["dead_pixels"])
                               + ["cosmic"] * len(f["cosmics"]) + ["empty_frames", "at_cap"])
        for t in e["faults"]:
            assert set(t) == {"kind", "frames", "pixels", "frequency_hz", "detail", "q_bin"}
        assert e["counter_cap"] == f["cap"]
        assert e["inspect"].startswith(f"xpcsviewer inspect {e['open']} --qmap {e['qmap']}")
        assert f"--cap {f['cap']}" in e["inspect"]
        empty = e["faults"][[t["kind"] for t in e["faults"]].index("empty_frames")]["frames"]
        with open_raw_source(faulty_demo / e["open"]) as raw:
            assert raw.layout == spec["layout"] and raw.raw_frames == e["frames"] == 300
            # a frame at a time: a Rigaku frame is 512 x 1024
            peak = 0
            for k in range(300):
                fr = raw.read(k, k + 1)[0]
                peak = max(peak, int(fr.max()))
                assert (fr.sum() == 0) == (empty[0] <= k <= empty[1])
                assert all(fr[r, c] == 0 for r, c in f["dead_pixels"])
        assert peak == f["cap"]  # the bright spot reads the cap, nothing exceeds it


def test_dense_acquisition_is_correlated_on_frames(faulty_demo, specs):
    res = faulty_demo / f"{specs[0]['name']}_results.hdf"
    with h5py.File(res, "r") as f:
        assert f["xpcs/multitau/config/path"][()].decode() == "dense"
        assert f["xpcs/multitau/normalized_g2"].shape[0] > 10
    with h5py.File(faulty_demo / "raw" / f"{specs[0]['name']}.h5", "r") as f:
        ds = f["/entry/data/data"]
        assert ds.shape == (300, 128, 128) and ds.compression is not None
        assert f["/entry/instrument/detector_1/saturation_value"][()] == 255


def test_second_run_reuses_them(faulty_demo, specs, monkeypatch, capsys):
    monkeypatch.setattr(demo_mod, "DEMO_SPECS", specs)
    for i, spec in enumerate(specs):
        assert demo_mod.check_demo_file(faulty_demo, spec, i) is None
    assert main(["demo", "--no-gui", "--out", str(faulty_demo), "--quiet"]) == 0
    assert "reused 2 complete demo files" in capsys.readouterr().out
