"""``xpcsviewer ages`` and ``fit --ages`` end to end (issue 35)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.io.results.writer import write_result
from xpcsviewer.synthetic.demo_specs import DEMO_SPECS
from xpcsviewer.synthetic.results import build_result


def _spec(prefix: str) -> dict:
    return next(s for s in DEMO_SPECS if s["name"].startswith(prefix))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ages")
    out = {}
    for name in ("C01", "C02", "A01", "D01"):
        r, e = build_result(_spec(name), seed=2)
        out[name] = write_result(d / f"{name}_results.hdf", r, saxs_2d=e["saxs_2d"],
                                 c2_maps=e["c2_maps"] or None)
    return d, out


def test_ages_writes_csv_and_json_with_both_ways_and_a_verdict(files, capsys):
    d, f = files
    before = f["C01"].read_bytes()
    csv_path, js = d / "a.csv", d / "a.json"
    code = main(["ages", str(f["C01"]), str(f["C02"]), "--ages", "2,5,8", "--widths", "2",
                 "--bins", "2,3", "-o", str(csv_path), "--json", str(js), "--quiet"])
    assert code == 0
    assert f["C01"].read_bytes() == before  # inputs never change
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 2 * 2 * 3 * 2  # files x bins x windows x ways
    assert {r["way"] for r in rows} == {"age", "t1"}
    assert {r["bin"] for r in rows} == {"2", "3"}
    rec = json.loads(js.read_text())["files"]
    assert [r["bins"] for r in rec] == [[2, 3], [2, 3]]
    assert rec[0]["windows"]["centre_s"] == [2.0, 5.0, 8.0]
    assert rec[0]["verdict"] == ["ageing", "ageing"]
    assert rec[1]["verdict"] == ["stationary", "stationary"]
    # the law's slope against the truth written into the file's sample
    a = rec[0]["laws"]["linear"][1]["value"]["a"]
    from xpcsviewer.io import read_result

    truth = read_result(f["C01"]).sample
    assert "ageing_slope" in truth and "tau0_twotime" in truth
    a_true = np.asarray(truth["ageing_slope"])[np.asarray(truth["twotime_bins"]) == 3][0]
    lo, hi = rec[0]["laws"]["linear"][1]["interval95"]["a"]
    assert lo < a_true < hi and a == pytest.approx(a_true, rel=0.5)
    assert len(rec[0]["heterogeneity"]["chi4"]) == 3  # windows x bins x lags


def test_ages_windows_and_refusals(files, capsys):
    d, f = files
    out = d / "w.csv"
    assert main(["ages", str(f["C02"]), "--windows", "3", "--log", "-o", str(out),
                 "--quiet"]) == 0
    rows = list(csv.DictReader(out.open()))
    lo = sorted({float(r["age_lo_s"]) for r in rows})
    hi = sorted({float(r["age_hi_s"]) for r in rows})
    assert lo == pytest.approx([1.25, 2.5, 5.0]) and hi == pytest.approx([2.5, 5.0, 10.0])
    # an existing output is replaced only with --overwrite (exit 2)
    assert main(["ages", str(f["C02"]), "-o", str(out), "--quiet"]) == 2
    assert main(["ages", str(f["C02"]), "--ages", "1", "--windows", "2", "-o",
                 str(d / "x.csv")]) == 2
    assert main(["ages", str(f["C02"]), "--ages", "1,x", "-o", str(d / "x.csv")]) == 2
    capsys.readouterr()
    # a file without two-time data: exit 3, one line naming the file and the dataset
    assert main(["ages", str(f["A01"]), "-o", str(d / "y.csv"), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "A01_results.hdf" in err and "/xpcs/twotime" in err and "Traceback" not in err
    assert not (d / "y.csv").exists()
    assert main(["ages", str(f["C02"]), "--bins", "7", "-o", str(d / "z.csv"),
                 "--quiet"]) == 3


def test_the_age_lag_map_is_read_when_the_file_has_one(files, tmp_path):
    from xpcsviewer.compute.ages.age_lag import from_full_maps
    from xpcsviewer.jobs.ages import ages_file, analyse_ages

    r, e = build_result(_spec("C01"), seed=2)
    amap = from_full_maps(e["c2_maps"], r.twotime.processed_bins, r.frame_time)
    # beside full maps that differ: what is read must be the age x lag map
    other = [m + 1.0 for m in e["c2_maps"]]
    path = write_result(tmp_path / "C01_age_lag_results.hdf", r, saxs_2d=e["saxs_2d"],
                        c2_maps=other, age_lag=amap)
    got = ages_file(path, n_windows=3, bins=[3], model="single")
    ref = analyse_ages(amap, n_windows=3, bins=[3], model="single")
    assert got.source == "age_lag"
    ok = np.isfinite(ref.cuts.g2)
    assert np.array_equal(ok, np.isfinite(got.cuts.g2))
    # the file stores C as float32
    assert np.allclose(got.cuts.g2[ok], ref.cuts.g2[ok], rtol=1e-6)


def test_fit_ages_adds_the_ages_record(files):
    d, f = files
    js = d / "fit.json"
    assert main(["fit", str(f["D01"]), str(f["A01"]), "--ages", "--windows", "2",
                 "-o", str(js), "--quiet"]) == 0
    recs = {r["path"].split("/")[-1]: r for r in json.loads(js.read_text())["files"]}
    both = recs["D01_results.hdf"]["ages"]
    assert both["bins"] == [1, 2, 3] and len(both["verdict"]) == 3
    assert len(both["tau_s"]["value"]) == 2  # ways
    assert "no two-time data" in recs["A01_results.hdf"]["ages"]["error"]
