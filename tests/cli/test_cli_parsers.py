"""Each command owns its parser (issue 44): ``add_arguments`` in its module, the
shared pieces in ``commands/_args.py``; ``cli.py`` only assembles them. The values
below are the ones the commands rely on (defaults and types)."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpcsviewer import cli
from xpcsviewer.cli import COMMANDS, SUBCOMMANDS, build_parser

PKG = Path(cli.__file__).resolve().parent


def _parse(argv: list[str], lazy: bool = False) -> dict:
    """What ``main`` parses, without running the command."""
    return vars(build_parser(lazy=lazy).parse_args(cli._normalise_argv(argv)))


def test_every_command_module_has_add_arguments():
    modules = {p.stem for p in (PKG / "commands").glob("*.py") if not p.stem.startswith("_")}
    assert modules == set(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        mod = importlib.import_module(f"xpcsviewer.commands.{name}")
        assert callable(mod.add_arguments) and callable(mod.run), name


def test_cli_adds_no_argument_itself():
    tree = ast.parse((PKG / "cli.py").read_text())
    calls = {n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not calls & {"add_argument", "add_argument_group", "add_mutually_exclusive_group"}


def test_help_lists_every_command_with_its_help():
    text = " ".join(build_parser(lazy=True).format_help().split())
    for name, help_ in COMMANDS.items():
        assert name in text and " ".join(help_.split()) in text


def test_paths_alone_open_the_gui():
    assert _parse([]) == _parse(["gui"]) and _parse([])["paths"] == []
    a = _parse(["a.hdf", "folder"])
    assert a["command"] == "gui" and a["paths"] == ["a.hdf", "folder"]
    assert (a["backend"], a["device"], a["verbose"], a["quiet"]) == (None, None, 0, False)


def test_common_options_before_and_after_the_command():
    # after the command they override, before it they are kept (SUPPRESS defaults)
    a = _parse(["--device", "gpu", "--backend", "numpy", "info", "f.hdf"])
    assert (a["device"], a["backend"]) == ("gpu", "numpy")
    a = _parse(["--device", "gpu", "info", "f.hdf", "--device", "cpu", "-v", "--quiet"])
    assert (a["device"], a["verbose"], a["quiet"]) == ("cpu", 1, True)


def test_correlate_defaults():
    a = _parse(["correlate", "raw.h5", "--qmap", "q.h5", "-o", "out.hdf"])
    assert a["raw"] == ["raw.h5"] and a["qmap"] == "q.h5" and a["output"] == "out.hdf"
    assert (a["mode"], a["path"], a["engine"], a["dq"]) == ("multitau", "auto", "auto", "all")
    assert (a["begin_frame"], a["end_frame"], a["stride_frame"], a["avg_frame"]) == (0, -1, 1, 1)
    assert (a["twotime_ages_points"], a["twotime_groups"], a["group_tile"]) == (8, 0, 8)
    assert a["frame_time"] is None and a["bin_time"] is None and a["num_partial_g2"] == 0
    assert not (a["overwrite"] or a["skip_existing"] or a["save_g2_pixel"] or a["twotime_ages"])
    assert a["workers"] is None and a["scheduler"] is None
    a = _parse(["correlate", "r1", "r2", "--qmap", "q", "-o", "d", "--frame-time", "1e-3",
                "--workers", "2", "--end-frame", "100"])
    assert a["raw"] == ["r1", "r2"] and a["frame_time"] == 1e-3
    assert a["workers"] == 2 and a["end_frame"] == 100 and isinstance(a["end_frame"], int)


def test_fit_defaults_and_ages():
    a = _parse(["fit", "f.hdf"])
    assert a["model"] is None  # auto, said as None: the fit job picks per q-bin
    assert a["ages"] is None and a["law"] == "linear" and a["windows"] is None
    assert a["q_range"] is None and a["t_range"] is None and a["output"] is None
    assert a["temperature"] is None and a["viscosity"] is None and not a["bayes"]
    assert "skip_existing" not in a and a["workers"] is None
    assert _parse(["fit", "f.hdf", "--ages"])["ages"] is True
    a = _parse(["fit", "f.hdf", "--ages", "10,20", "--t-range", "1e-5", "1",
                "--temperature", "300"])
    assert a["ages"] == "10,20" and a["t_range"] == [1e-5, 1.0] and a["temperature"] == 300.0
    with pytest.raises(SystemExit):
        _parse(["fit", "f.hdf", "--model", "nope"])


def test_ages_live_series_defaults():
    a = _parse(["ages", "f.hdf", "-o", "a.csv"])
    assert (a["model"], a["law"], a["log"], a["json"]) == ("auto", "linear", False, None)
    assert a["ages"] is None and a["bins"] is None and a["t_range"] is None
    a = _parse(["live", "src", "--qmap", "q", "-o", "o.hdf"])
    assert (a["every"], a["idle"], a["start_wait"], a["poll"]) == (2.0, 10.0, 120.0, 0.2)
    assert a["dataset"] == "/entry/data/data" and a["model"] == "auto" and a["frames"] is None
    a = _parse(["series", "a", "b", "-o", "s.csv", "--q-range", "0.001", "0.01"])
    assert a["x"] == "start_time" and a["model"] == "auto" and a["q_range"] == [0.001, 0.01]


def test_average_export_snapshot_qmap_defaults():
    a = _parse(["average", "a", "b", "-o", "o.hdf"])
    assert a["baseline_range"] == (0.95, 1.05) and a["mad_threshold"] == 5.0
    assert (a["error_method"], a["baseline_q_index"], a["baseline_window"]) == ("weighted", 0, 10)
    a = _parse(["export", "f", "--plot", "g2", "--plot", "saxs1d", "-o", "d"])
    assert a["plot"] == ["g2", "saxs1d"] and (a["format"], a["size"]) == ("png", "double")
    assert a["skip_existing"] is False
    assert _parse(["snapshot", "--tab", "g2", "-o", "o.png"])["size"] == (1400, 900)
    assert _parse(["snapshot", "--tab", "g2", "-o", "o.png", "--size", "800", "600"])["size"] \
        == [800, 600]
    a = _parse(["qmap", "--shape", "100", "200", "--energy", "10", "--det-dist", "5",
                "--pixel-size", "75e-6", "--bcx", "50", "--bcy", "60", "-o", "q.hdf"])
    assert a["shape"] == [100, 200] and (a["dq_num"], a["sq_num"], a["dp_num"]) == (36, 360, 1)
    assert _parse(["audit", "f", "-o", "p.csv"])["top"] == 100
    assert _parse(["report", "f"])["output"] is None
    assert _parse(["demo"])["out"] == "demo_data"
    assert _parse(["device"])["profile"] is None


@pytest.mark.parametrize("argv", [
    ["a.hdf"],
    ["--device", "gpu", "correlate", "r", "--qmap", "q", "-o", "o", "--mode", "both"],
    ["fit", "f", "--ages", "--law", "power", "-v"],
    ["average", "a", "-o", "o", "--no-reject"],
    ["export", "f", "--plot", "g2", "-o", "d", "--skip-existing"],
])
def test_lazy_parser_parses_as_the_full_one(argv):
    assert _parse(argv, lazy=True) == _parse(argv)


def test_lazy_parser_imports_only_the_command_it_parses():
    code = (
        "import sys, json, contextlib, io\n"
        "from xpcsviewer.cli import build_parser\n"
        "def cmds():\n"
        "    return sorted(m for m in sys.modules if m.startswith('xpcsviewer.commands.'))\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        build_parser(lazy=True).parse_args(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "top = cmds()\n"
        "build_parser(lazy=True).parse_args(['ages', 'f', '-o', 'a.csv'])\n"
        "print(json.dumps([top, cmds(), 'numpy' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    top, after, numpy = json.loads(out.stdout.strip().splitlines()[-1])
    assert top == ["xpcsviewer.commands._args"]
    assert after == ["xpcsviewer.commands._args", "xpcsviewer.commands.ages"]
    assert not numpy
