"""``xpcsviewer demo``'s photon-sparse acquisitions: one per raw layout in OUT/raw with its
q-map and truth.json, results correlated on photons (``config/path = sparse``) that carry
the truth and fit back to it; a second run reuses them, a changed raw file is refused.

Only the sparse part of the demo runs here (DEMO_SPECS replaced by SPARSE_SPECS, as
test_demo_reuse.py replaces it by tiny specs): a few seconds.
"""

from __future__ import annotations

import json
import shutil
import time
from unittest import mock

import h5py
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.multitau.photons import available
from xpcsviewer.io import read_result
from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic import demo as demo_mod
from xpcsviewer.synthetic.demo_sparse import SPARSE_SPECS, raw_paths, sparse_truth

pytestmark = pytest.mark.skipif(not available(), reason="the photon correlator needs numba")

LAYOUTS = ["rigaku", "rigaku-3m", "esrf-csr", "id11-sparse", "timepix"]


def _demo(out, *extra):
    return main(["demo", "--no-gui", "--quiet", "--out", str(out), *extra])


@pytest.fixture(scope="module")
def sparse_demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo_sparse")
    with mock.patch.object(demo_mod, "DEMO_SPECS", list(SPARSE_SPECS)):
        assert _demo(out) == 0
    return out


@pytest.fixture
def sparse_specs(monkeypatch):
    monkeypatch.setattr(demo_mod, "DEMO_SPECS", list(SPARSE_SPECS))
    return SPARSE_SPECS


def _state(out):
    return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.stat().st_ino)
            for p in sorted(out.rglob("*")) if p.is_file()}


def test_raw_folder_one_acquisition_per_layout_with_truth(sparse_demo):
    out = sparse_demo
    assert sorted(s["layout"] for s in SPARSE_SPECS) == sorted(LAYOUTS)
    doc = json.loads((out / "raw" / "truth.json").read_text())
    assert doc["seed"] == 0 and doc["demo_version"] == demo_mod.DEMO_VERSION
    entries = {e["name"]: e for e in doc["acquisitions"]}
    assert list(entries) == [s["name"] for s in SPARSE_SPECS]
    for spec in SPARSE_SPECS:
        e = entries[spec["name"]]
        files, qmap = raw_paths(out, spec)
        assert e["files"] == [f"raw/{p.name}" for p in files] and qmap.is_file()
        assert all(p.is_file() for p in files)
        assert e["layout"] == spec["layout"] and e["result"] == f"{spec['name']}_results.hdf"
        truth = sparse_truth(spec)
        for key in ("D", "radius", "contrast") if spec["layout"] != "timepix" else ("tau",
                                                                                  "contrast"):
            assert e["truth"][key] == pytest.approx(truth[key][0])
        with open_raw_source(out / e["open"], shape=tuple(e["detector_shape"])) as raw:
            assert raw.layout == spec["layout"]
            assert raw.raw_frames == e["frames"] and raw.raw_events == e["hits"] > 1000
            # photon-sparse: at most a few percent of the pixels hit per frame
            assert e["hits"] / (e["frames"] * raw.frame_shape[0] * raw.frame_shape[1]) < 0.01
        if spec["layout"] == "timepix":
            assert e["time_tag"] and e["frame_time_s"] == pytest.approx(1.5625e-9)
        else:
            assert e["frame_time_s"] == spec["acquisition"]["frame_time"]
            assert e["frames"] == spec["acquisition"]["n_frames"]
    assert len(entries["S02_rigaku3m_R100nm_water"]["files"]) == 6
    assert len(entries["S03_esrf_csr_R150nm_water"]["files"]) == 4
    # small on disk
    assert sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) < 40e6


def test_results_are_photon_path_and_carry_the_truth(sparse_demo):
    out = sparse_demo
    for spec in SPARSE_SPECS:
        path = out / f"{spec['name']}_results.hdf"
        with h5py.File(path, "r") as f:
            assert f["xpcs/multitau/config/path"][()].decode() == "sparse"
            assert f["xpcs/multitau/config/raw_layout"][()].decode() == spec["layout"]
        res = read_result(path)
        assert res.analysis_type == ("Multitau",)
        truth = sparse_truth(spec)
        keys = ("tau", "contrast") if spec["layout"] == "timepix" else ("D", "radius",
                                                                         "contrast")
        for key in keys:
            assert res.sample[key] == pytest.approx(truth[key][0])
        assert res.multitau.valid.any()


def test_fits_give_the_truth_back(sparse_demo):
    from xpcsviewer.jobs.fitfile import fit_result_files

    out = sparse_demo
    rigaku = out / "S01_rigaku_R100nm_water_results.hdf"
    tpx = out / "S05_timepix_timetag_tau200ns_results.hdf"
    rec = fit_result_files([str(rigaku)], model="single")[0].record
    d, truth = rec["diffusion"], read_result(rigaku).sample
    assert d["verdict"] == "diffusive"
    assert d["D"] == pytest.approx(truth["D"], rel=0.15), (d["D"], d["D_err"])
    assert all(c == pytest.approx(truth["contrast"], abs=0.06)
               for c in rec["contrast"]["value"][:6])
    # the time-tag list: tau of each bin, with the multi-tau averaging in the model
    rec = fit_result_files([str(tpx)], model="single_avgcorr")[0].record
    for tau in rec["tau"]["value"]:
        assert tau == pytest.approx(200e-9, rel=0.08)


def test_second_run_reuses_everything(sparse_demo, sparse_specs, capsys):
    out = sparse_demo
    before = _state(out)
    capsys.readouterr()
    t0 = time.perf_counter()
    assert _demo(out) == 0
    assert time.perf_counter() - t0 < 1.0
    text = capsys.readouterr().out
    assert f"reused {len(SPARSE_SPECS)} complete demo files" in text
    assert "raw (truth.json)" in text
    assert _state(out) == before  # nothing rewritten, truth.json included
    for i, spec in enumerate(SPARSE_SPECS):
        assert demo_mod.check_demo_file(out, spec, i, 0) is None


@pytest.mark.parametrize("spoil", ["raw_changed", "raw_missing", "orphan_raw", "truth_foreign"])
def test_changed_raw_files_refused_then_replaced(sparse_demo, sparse_specs, tmp_path, capsys,
                                                 spoil):
    src = sparse_demo
    out = tmp_path / "demo"
    shutil.copytree(src, out)
    spec = SPARSE_SPECS[3]  # the ImageD11 file: the cheapest to simulate again
    result = out / f"{spec['name']}_results.hdf"
    files, _qmap = raw_paths(out, spec)
    if spoil == "raw_changed":
        with h5py.File(files[0], "r+") as f:
            f["1.1/intensity"][0] += 1
        named, why = result, "raw file raw/S04_id11_sparse_R500nm_water_sparse.h5 is not"
    elif spoil == "raw_missing":
        files[0].unlink()
        named, why = result, "raw file raw/S04_id11_sparse_R500nm_water_sparse.h5 is missing"
    elif spoil == "orphan_raw":
        result.unlink()
        named, why = files[0], "a raw file of a demo acquisition without its result file"
    else:
        (out / "raw" / "truth.json").write_text("my notes\n")
        named, why = out / "raw" / "truth.json", "not a truth file of the demo"
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert _demo(out) == 2
    err = capsys.readouterr().err
    assert f"{named}: " in err and why in err, err
    assert "use --overwrite" in err and "Traceback" not in err
    after = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # refused: nothing written
    # asked: simulated again and replaced (this acquisition only, to keep it quick)
    demo_mod.write_demo(out, names=[spec["name"]], overwrite=True)
    for i, s in enumerate(SPARSE_SPECS):
        assert demo_mod.check_demo_file(out, s, i, 0) is None
    doc = json.loads((out / "raw" / "truth.json").read_text())
    assert [e["name"] for e in doc["acquisitions"]] == [s["name"] for s in SPARSE_SPECS]
