"""``xpcsviewer live`` and ``xpcsviewer series`` on the command line."""

from __future__ import annotations

import csv
import json

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.fitting.status import FitStatus

STATUSES = {s.value for s in FitStatus}


def test_live_json_events_fit_and_final(small_qmap, writer, tmp_path, tools, capfd):
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    w = writer(raw, "--frames", "2500", "--rate", "2000", "--mode", "swmr", "--block", "50",
               "--frame-time", "1e-3")
    code = main(["live", str(raw), "--qmap", str(small_qmap), "-o", str(out), "--fit",
                 "--json-events", "--every", "0.3", "--idle", "5"])
    assert code == 0
    assert w.wait() == 0
    lines = [json.loads(x) for x in capfd.readouterr().out.splitlines() if x.strip()]
    assert lines[0]["event"] == "ready" and lines[0]["fit"]
    lines = lines[1:]
    assert lines and lines[-1]["event"] == "final"
    assert all(e["event"] == "update" and e["partial"] for e in lines[:-1])
    frames = [e["frames"] for e in lines]
    assert frames == sorted(frames) and frames[-1] == 2500
    last = lines[-1]
    assert last["partial"] is False and last["end"] == "closed"
    assert last["latency_s"] is not None and last["latency_s"] >= 0
    for key in ("frame_rate_hz", "writer_rate_hz", "lag_frames", "lag_s"):
        assert key in last
    assert len(last["bins"]) == 6 and {b["status"] for b in last["bins"]} <= STATUSES
    for b in last["bins"]:
        assert set(b) >= {"bin", "q", "tau_s", "tau_err_s", "contrast", "status"}
    # the fits on disk are the fit command's own record of the final file
    fits = json.loads((tmp_path / "live_fit.json").read_text())
    assert fits["files"][0]["path"] == str(out)
    assert fits["files"][0]["status"] == [b["status"] for b in last["bins"]]
    tools.assert_same_result(out, tools.correlate_ref(raw, small_qmap, tmp_path / "batch.hdf"))


def test_live_usage_and_input_errors(small_qmap, tmp_path, capsys):
    out = tmp_path / "o.hdf"
    assert main(["live", str(tmp_path / "r.h5"), "--qmap", str(small_qmap), "-o", str(out),
                 "--every", "0"]) == 2
    out.write_bytes(b"x")
    assert main(["live", str(tmp_path / "r.h5"), "--qmap", str(small_qmap), "-o",
                 str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    raw = tmp_path / "wrong.h5"
    with h5py.File(raw, "w") as f:
        f["/entry/data/data"] = np.ones((20, 8, 8), np.uint16)
    assert main(["live", str(raw), "--qmap", str(small_qmap), "-o", str(tmp_path / "p.hdf"),
                 "--idle", "0.3"]) == 3
    assert "q-map" in capsys.readouterr().err


def _series_inputs(small_qmap, tmp_path):
    """Three live results of growing length, taken one after the other."""
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs.live import LiveOptions, follow
    from xpcsviewer.synthetic.acquisition import frame_source, write_growing

    paths = []
    for i, n in enumerate((600, 900, 1200)):
        raw = tmp_path / f"raw{i}.h5"
        write_growing(raw, frame_source((32, 32), n, seed=i), rate=1e6, shape=(32, 32),
                      mode="swmr", frame_time=1e-3)
        out = tmp_path / f"run{i}_results.hdf"
        follow(raw, read_qmap(small_qmap), out, LiveOptions(idle=1))
        paths.append(str(out))
    return paths


def test_series_csv_index_and_field(small_qmap, tmp_path):
    paths = _series_inputs(small_qmap, tmp_path)
    out = tmp_path / "s.csv"
    assert main(["series", *paths, "-o", str(out), "--x", "/xpcs/live/frames", "--quiet"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3 * 6
    assert [float(r["x:/xpcs/live/frames"]) for r in rows[::6]] == [600, 900, 1200]
    assert {r["status"] for r in rows} <= STATUSES
    assert main(["series", *paths, "-o", str(tmp_path / "i.csv"), "--x", "index",
                 "--quiet"]) == 0
    rows = list(csv.DictReader((tmp_path / "i.csv").open()))
    assert [r["x:index"] for r in rows[::6]] == ["0", "1", "2"]
    assert main(["series", *paths, "-o", str(tmp_path / "x.txt")]) == 2


@pytest.mark.realdata
def test_series_of_the_b0147_ageing_run(real_data_dir, tmp_path):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("Average_B0147_*_results.hdf"))
    if len(files) != 10:
        pytest.skip("the ten B0147 files are not present")
    out = tmp_path / "b0147.csv"
    assert main(["series", *map(str, files), "-o", str(out), "--quiet"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 10 * 27
    el = sorted({float(r["elapsed_s"]) for r in rows})
    assert el[0] == 0 and 7000 < el[-1] < 9000  # 2.2 h of ageing
    assert {r["status"] for r in rows} <= STATUSES
    # the same numbers as `fit` gives for the last file
    fit_json = tmp_path / "fit.json"
    assert main(["fit", str(files[-1]), "-o", str(fit_json), "--quiet"]) == 0
    rec = json.loads(fit_json.read_text())["files"][0]
    last = [r for r in rows if r["index"] == "9"]
    assert [r["status"] for r in last] == rec["status"]
    got = [float(r["tau_s"]) if r["tau_s"] else None for r in last]
    assert got == rec["tau"]["value"]
