"""``xpcsviewer info`` of a file with only a multi-tau two-time age x lag map (issue 35:
``correlate --mode multitau --twotime-ages``) names the map: its bins, frames, frame time
and levels (a note line; ``"age_lag"`` in JSON); a full-map file's output is as before."""

from __future__ import annotations

import json

from xpcsviewer.cli import main


def test_info_names_the_age_lag_map(age_lag_only_file, capsys):
    from xpcsviewer.io.results.age_lag import read_age_lag

    n_levels = len(read_age_lag(age_lag_only_file).levels)
    capsys.readouterr()
    assert main(["info", str(age_lag_only_file)]) == 0
    lines = capsys.readouterr().out.splitlines()
    note = [ln for ln in lines if "age x lag map" in ln]
    assert note == [f"note: {age_lag_only_file.name}: age x lag map (multi-tau two-time) of "
                    f"3 bins (1-3): 300 frames of 0.01 s, {n_levels} levels; "
                    "no full two-time map"]
    assert main(["info", "--json", str(age_lag_only_file)]) == 0
    rec = json.loads(capsys.readouterr().out)["files"][0]
    assert rec["twotime_bins"] is None
    assert rec["age_lag"] == {"bins": [1, 2, 3], "n_frames": 300, "frame_time_s": 0.01,
                              "n_levels": n_levels, "full_map": False}


def test_a_full_map_file_is_listed_as_before(tiny_demo_dir, capsys):
    p = next(tiny_demo_dir.glob("T02*_results.hdf"))
    capsys.readouterr()
    assert main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    assert "age x lag" not in out and "T02" in out
    assert main(["info", "--json", str(p)]) == 0
    rec = json.loads(capsys.readouterr().out)["files"][0]
    assert rec["twotime_bins"] == [1] and rec["age_lag"] is None


def test_bins_as_runs():
    from xpcsviewer.views.age_lag_map import bins_text

    assert bins_text([9, 1, 2, 3, 7, 10]) == "1-3, 7, 9-10"
    assert bins_text([4]) == "4" and bins_text([]) == ""
