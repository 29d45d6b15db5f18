"""Issue 11: every command over the bad-file corpus (items 2, 3, 5, 7 and "done means").

Bad input data: exit 3, no traceback, one line per bad file naming the file and
(where the problem is inside the file) the dataset; no input modified. The
multi-file commands take the whole corpus in one real ``python -m xpcsviewer``
process; the one-file commands run case by case in one driver process.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

pytestmark = pytest.mark.slow

#: Totals over the corpus, printed by the last test (the issue's closing figures):
#: one outcome per (command, input file) pair.
TOTALS = {
    "outcomes": 0,
    "processes": 0,
    "tracebacks": 0,
    "exit": Counter(),
    "inputs_modified": 0,
}


def _record(rc: int, stderr: str, n_files: int = 1) -> None:
    TOTALS["outcomes"] += n_files
    TOTALS["exit"][rc] += n_files
    TOTALS["tracebacks"] += "Traceback" in stderr


def _lines_naming(stderr: str, path) -> list[str]:
    from xpcsviewer.io.errors import one_line

    name = one_line(os.fsdecode(path))  # a newline in a name is shown escaped
    return [ln for ln in stderr.splitlines() if name in ln]


def _assert_named(stderr: str, case, prog: str) -> None:
    lines = _lines_naming(stderr, case.path)
    assert len(lines) == 1, (case.name, prog, stderr[-2000:])
    line = lines[0]
    assert line.startswith(f"xpcsviewer {prog}"), (case.name, line)
    if case.dataset:
        assert case.dataset in line, (case.name, line)


@pytest.fixture
def unchanged(corpus, issue11):
    """Fails the test if any corpus file changed (bytes or modification time)."""
    before = issue11.fingerprint(corpus.inputs())
    yield
    after = issue11.fingerprint(corpus.inputs())
    changed = [p for p in before if before[p] != after.get(p)]
    TOTALS["inputs_modified"] += len(changed)
    assert not changed


def _bad_results(corpus):
    return [*corpus.results, corpus.stack_short][:-1]  # the short stack reads fine


@pytest.mark.parametrize("command", ["info", "fit", "export", "average"])
def test_multi_file_commands_name_every_bad_file(
    corpus, tmp_path, unchanged, command, issue11
):
    cases = _bad_results(corpus)
    files = [c.path for c in cases]
    extra = {
        "info": [],
        "fit": ["-o", tmp_path / "fit.json", "--quiet"],
        "export": [
            "--plot",
            "g2",
            "--plot",
            "saxs2d",
            "-o",
            tmp_path / "figs",
            "--quiet",
        ],
        "average": ["-o", tmp_path / "avg.hdf", "--quiet"],
    }[command]
    # A good file too: it is still processed (exit stays 3 for the bad ones).
    proc = issue11.cli([command, corpus.good, *files, *extra], tmp_path)
    err = proc.stderr.decode("utf-8", "replace")
    _record(proc.returncode, err, len(files))
    TOTALS["processes"] += 1
    assert "Traceback" not in err, err[-3000:]
    assert proc.returncode == 3, err[-3000:]
    for c in cases:
        _assert_named(err, c, command)
    if command == "export":
        assert (tmp_path / "figs" / "good_saxs2d.png").is_file()
    if command == "fit":
        assert (tmp_path / "fit.json").is_file()


def test_snapshot_fails_like_info_on_every_bad_file(
    corpus, tmp_path, unchanged, issue11
):
    cases = _bad_results(corpus)
    runs = [
        ["snapshot", c.path, "--tab", "g2", "-o", tmp_path / f"{c.name}.png"]
        for c in cases
    ]
    for c, r in zip(cases, issue11.drive(runs, tmp_path), strict=True):
        _record(r["rc"], r["stderr"])
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 3, (c.name, r)
        _assert_named(r["stderr"], c, "snapshot")
        assert not (tmp_path / f"{c.name}.png").exists()


def test_average_names_a_short_g2_stack(corpus, tmp_path, unchanged, issue11):
    c = corpus.stack_short
    proc = issue11.cli(
        ["average", corpus.stack_good, c.path, "-o", tmp_path / "a.hdf", "--quiet"],
        tmp_path,
    )
    err = proc.stderr.decode()
    _record(proc.returncode, err)
    assert proc.returncode == 3 and "Traceback" not in err, err
    _assert_named(err, c, "average")
    assert not (tmp_path / "a.hdf").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_correlate_raw_and_qmap_corpus(corpus, tmp_path, unchanged, issue11):
    runs, cases = [], []
    for c in corpus.raws:
        runs.append(
            [
                "correlate",
                c.path,
                "--qmap",
                corpus.qmap_good,
                "-o",
                tmp_path / f"{c.name}.hdf",
                "--quiet",
                "--backend",
                "numpy",
            ]
        )
        cases.append(c)
    for c in corpus.qmaps:
        runs.append(
            [
                "correlate",
                corpus.raw_good,
                "--qmap",
                c.path,
                "-o",
                tmp_path / f"q_{c.name}.hdf",
                "--quiet",
                "--backend",
                "numpy",
            ]
        )
        cases.append(c)
    for c, r in zip(cases, issue11.drive(runs, tmp_path), strict=True):
        _record(r["rc"], r["stderr"])
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 3, (c.name, r)
        _assert_named(r["stderr"], c, "correlate")
    assert not list(tmp_path.glob("*.hdf"))


def test_qmap_mask_corpus(corpus, tmp_path, unchanged, issue11):
    geo = issue11.qmap_geometry
    runs = [
        ["qmap", *geo, "--mask", c.path, "-o", tmp_path / f"{c.name}.hdf"]
        for c in corpus.masks
    ]
    for c, r in zip(corpus.masks, issue11.drive(runs, tmp_path), strict=True):
        _record(r["rc"], r["stderr"])
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 3, (c.name, r)
        _assert_named(r["stderr"], c, "qmap")


def test_impossible_options_are_usage_errors(corpus, tmp_path, unchanged, issue11):
    """Item 7: --frame-time inf and --avg-frame -3 are refused (exit 2), nothing written."""
    base = ["correlate", corpus.raw_good, "--qmap", corpus.qmap_good, "--quiet"]
    runs = [
        [*base, "-o", tmp_path / "a.hdf", "--frame-time", "inf"],
        [*base, "-o", tmp_path / "b.hdf", "--frame-time", "nan"],
        [*base, "-o", tmp_path / "c.hdf", "--avg-frame", "-3"],
        [
            "snapshot",
            corpus.good,
            "--tab",
            "g2",
            "-o",
            tmp_path / "d.png",
            "--size",
            "100000",
            "100000",
        ],
    ]
    for r in issue11.drive(runs, tmp_path):
        _record(r["rc"], r["stderr"])
        assert r["escaped"] is None and r["rc"] == 2, r
        assert len(r["stderr"].strip().splitlines()) == 1, r["stderr"]
    assert not list(tmp_path.glob("*.hdf")) and not list(tmp_path.glob("*.png"))


def test_odd_file_name_works_everywhere(corpus, tmp_path, unchanged, issue11):
    """Item 5: a non-UTF-8 byte in a file name (export, average, snapshot, fit, info)."""
    odd = corpus.odd
    runs = [
        ["info", odd],
        ["fit", odd, "-o", tmp_path / "f.json", "--quiet"],
        [
            "export",
            odd,
            "--plot",
            "g2",
            "--plot",
            "g2map",
            "-o",
            tmp_path / "figs",
            "--quiet",
        ],
        ["average", odd, corpus.good, "-o", tmp_path / "avg.hdf", "--quiet"],
        ["snapshot", odd, "--tab", "g2", "-o", tmp_path / "s.png", "--quiet"],
    ]
    for args, r in zip(runs, issue11.drive(runs, tmp_path), strict=True):
        _record(r["rc"], r["stderr"])
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 0, (args[0], r["stderr"][-2000:])
    assert (tmp_path / "s.png").stat().st_size > 10_000  # not a blank grab
    assert len(list((tmp_path / "figs").iterdir())) == 2


def test_pointer_cases_fail_fast_everywhere(corpus, tmp_path, issue11):
    """Issue 34: a FIFO behind an external link, VDS source or external storage, data
    outside the folder, a missing VDS source: info, fit, export, average (one process
    each, all cases at once) and snapshot (the GUI's file opening) name each file and
    its target with exit 3; nothing hangs (the run is killed at the time-out)."""
    always, outside = issue11.corpus_module.build_pointer_cases(tmp_path / "p", corpus.good)
    cases = always + outside
    files = [c.path for c in cases]
    for command, extra in (
        ("info", []),
        ("fit", ["-o", tmp_path / "fit.json", "--quiet"]),
        ("export", ["--plot", "g2", "-o", tmp_path / "figs", "--quiet"]),
        ("average", ["-o", tmp_path / "avg.hdf", "--quiet"]),
    ):
        proc = issue11.cli([command, corpus.good, *files, *extra], tmp_path, timeout=120)
        err = proc.stderr.decode("utf-8", "replace")
        _record(proc.returncode, err, len(files))
        TOTALS["processes"] += 1
        assert proc.returncode == 3 and "Traceback" not in err, err[-3000:]
        for c in cases:
            _assert_named(err, c, command)
    runs = [["snapshot", c.path, "--tab", "g2", "-o", tmp_path / f"{c.name}.png"]
            for c in cases]
    for c, r in zip(cases, issue11.drive(runs, tmp_path, timeout=300), strict=True):
        _record(r["rc"], r["stderr"])
        assert r["escaped"] is None and r["rc"] == 3, (c.name, r)
        _assert_named(r["stderr"], c, "snapshot")


def test_zz_corpus_totals(corpus):
    """The closing figures: printed with ``-s``; no run may have printed a traceback."""
    n_cases = (
        len(corpus.results)
        + len(corpus.raws)
        + len(corpus.qmaps)
        + len(corpus.masks)
        + len(corpus.degenerate)
        + 2
    )
    print(
        f"\nissue 11 corpus: {n_cases} files, {TOTALS['outcomes']} (command, file) "
        f"outcomes, {TOTALS['tracebacks']} tracebacks, exit codes "
        f"{dict(TOTALS['exit'])}, {TOTALS['inputs_modified']} inputs modified"
    )
    assert TOTALS["tracebacks"] == 0 and TOTALS["inputs_modified"] == 0
