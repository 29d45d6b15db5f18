"""``xpcsviewer inspect`` through the command line: the summary and findings table on
stdout, the JSON contract and the CSV header of -o, the refusals and their exit codes."""

import csv
import json

import numpy as np

from xpcsviewer.cli import main
from xpcsviewer.jobs.inspect import CSV_COLUMNS


def _raw(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.poisson(0.05, (300, 20, 24)).astype(np.uint16)
    x[:, 4, 9] = rng.poisson(4.0, 300)  # hot
    x[100:110] = 0  # empty
    np.save(tmp_path / "raw.npy", x)
    return tmp_path / "raw.npy"


def test_inspect_prints_and_writes_json_and_csv(tmp_path, capsys):
    raw = _raw(tmp_path)
    rc = main(["inspect", str(raw), "--frame-time", "0.002", "-o", str(tmp_path / "f.json"),
               "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "300 frames" in out and "frame time: 0.002 s" in out and "photons/frame" in out
    assert "hot_pixel" in out and "empty_frames" in out and "100..109" in out
    doc = json.loads((tmp_path / "f.json").read_text())
    assert list(doc) == ["findings"]
    kinds = {f["kind"] for f in doc["findings"]}
    assert kinds == {"hot_pixel", "empty_frames"}
    for f in doc["findings"]:
        assert set(f) == {"kind", "frames", "pixels", "frequency_hz", "detail", "q_bin"}
        assert len(f["frames"]) == 2
    assert next(f for f in doc["findings"] if f["kind"] == "hot_pixel")["pixels"] == [[4, 9]]
    assert main(["inspect", str(raw), "-o", str(tmp_path / "f.csv"), "--quiet"]) == 0
    rows = list(csv.reader(open(tmp_path / "f.csv", encoding="utf-8")))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 3


def test_inspect_refusals(tmp_path, capsys):
    raw = _raw(tmp_path)
    assert main(["inspect", str(raw), "-o", str(tmp_path / "f.txt")]) == 2
    (tmp_path / "f.json").write_text("{}")
    assert main(["inspect", str(raw), "-o", str(tmp_path / "f.json"), "--quiet"]) == 2
    assert main(["inspect", str(raw), "--bin-time", "1e-3", "--quiet"]) == 2
    assert main(["inspect", str(tmp_path / "missing.npy"), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "missing.npy" in err and "bin-time" in err
