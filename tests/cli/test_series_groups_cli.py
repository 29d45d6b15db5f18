"""Issue 49 item 1: ``xpcsviewer series`` keeps its columns, and where the files are not
one sample on one q-partition adds a last column ``group`` and says why on stderr."""

from __future__ import annotations

import csv
from unittest import mock

import pytest

from xpcsviewer.cli import main
from xpcsviewer.jobs.series import COLUMNS


@pytest.fixture(scope="module")
def mixed_dir(tmp_path_factory):
    """Two tiny repeats of one sample, one of another sample (R 100 nm), one on
    another partition (3 q-bins over the same detector)."""
    import copy

    from tests.conftest import _TINY_BASE
    from xpcsviewer.synthetic import demo as demo_mod

    base = copy.deepcopy(_TINY_BASE)
    specs = [{**copy.deepcopy(base), "name": "P01_repeat", "description": "repeat 1"},
             {**copy.deepcopy(base), "name": "P02_repeat", "description": "repeat 2"},
             {**copy.deepcopy(base), "name": "Q01_other_sample",
              "sample": {**base["sample"], "radius_m": 100e-9}},
             {**copy.deepcopy(base), "name": "R01_other_partition",
              "partition": {"dq_num": 3, "sq_num": 6}}]
    out = tmp_path_factory.mktemp("series_mixed")
    with mock.patch.object(demo_mod, "DEMO_SPECS", specs):
        demo_mod.write_demo(out, seed=0)
    return out


def _csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_series_csv_group_column_and_note(mixed_dir, tmp_path, capsys):
    files = [str(mixed_dir / f"{n}_results.hdf") for n in
             ("P01_repeat", "P02_repeat", "Q01_other_sample", "R01_other_partition")]
    out = tmp_path / "s.csv"
    assert main(["series", *files, "-o", str(out), "--x", "index", "--quiet"]) == 0
    rows = _csv(out)
    assert rows[0] == [*COLUMNS[:2], "x:index", *COLUMNS[3:], "group"]
    by_file = {}
    for r in rows[1:]:
        by_file.setdefault(r[0].rsplit("/", 1)[-1][:3], set()).add(r[-1])
    assert by_file == {"P01": {"1"}, "P02": {"1"}, "Q01": {"2"}, "R01": {"3"}}
    err = capsys.readouterr().err
    assert "note: not joined to P01_repeat +1 (lines of their own): Q01_other_sample " \
           "(other sample: radius 1e-07 vs 2.5e-07), R01_other_partition (its bins' q " \
           "differ by > 2 %" in err
    # one sample on one partition: the columns of before, no note
    one = tmp_path / "one.csv"
    assert main(["series", *files[:2], "-o", str(one), "--quiet"]) == 0
    assert _csv(one)[0][-1] == "chi2_red"
    assert "not joined" not in capsys.readouterr().err
