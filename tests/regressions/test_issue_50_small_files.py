"""Issue 50, item 4: our own small files (device profile, kernel record, session) that
are valid JSON but not the expected object, or hold impossible numbers, are ignored with
a warning naming the file; no command stops over them."""

from __future__ import annotations

import json
import math

import pytest

from xpcsviewer.backends.json_file import read_json_object
from xpcsviewer.backends.routing import DEFAULT_PROFILE, load_profile, route

NOT_OBJECTS = {"null": "null", "list": "[1, 2]", "string": '"profile"', "number": "3",
               "deep": "[" * 100_000 + "]" * 100_000, "not json": "{cpu: 1",
               "binary": b"\xff\xfe\x00".decode("latin-1")}


@pytest.mark.parametrize("name", list(NOT_OBJECTS))
def test_anything_but_an_object_is_ignored_naming_the_file(tmp_path, caplog, name):
    p = tmp_path / "device-profile.json"
    p.write_text(NOT_OBJECTS[name], encoding="latin-1")
    obj, why = read_json_object(p, "device profile")
    assert obj is None and str(p) in why and why.startswith("Ignored the device profile")
    assert load_profile(p) is DEFAULT_PROFILE
    assert str(p) in caplog.text


def _profile(cost: dict) -> dict:
    return {"version": DEFAULT_PROFILE.to_json()["version"], "costs":
            {"multitau": {"gpu": {"startup_s": 1.0, "compile_s": 1.0, "per_unit_s": 1e-10,
                                  "bytes_per_s": 1e10, "per_step_s": 0.0, **cost}}}}


@pytest.mark.parametrize("cost", [{"bytes_per_s": 0}, {"bytes_per_s": -5.0},
                                  {"startup_s": math.nan}, {"compile_s": -1.0},
                                  {"per_unit_s": math.inf}, {"per_step_s": "fast"},
                                  {"startup_s": True}, {"warp_s": 1.0}])
def test_impossible_costs_are_refused(tmp_path, caplog, cost):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(_profile(cost)))  # NaN/Infinity as Python writes them
    assert load_profile(p) is DEFAULT_PROFILE
    assert "not used" in caplog.text and str(p) in caplog.text


def test_a_good_profile_is_used_and_an_infinite_rate_means_no_copy(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(_profile({"bytes_per_s": math.inf, "per_unit_s": None})))
    prof = load_profile(p)
    assert prof.source == str(p)
    assert prof.cost("multitau", "gpu").per_unit_s is None  # no engine there
    r = route("multitau", work=1e6, requested="auto", profile=prof, accelerators=True)
    assert r.device == "cpu"


def test_commands_run_with_a_profile_that_is_not_an_object(tmp_path, monkeypatch, capsys):
    from xpcsviewer.cli import main

    p = tmp_path / "p.json"
    p.write_text("null")
    monkeypatch.setenv("XPCS_DEVICE_PROFILE", str(p))
    assert main(["device"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err


def test_kernel_record_that_is_not_an_object(tmp_path, monkeypatch):
    from xpcsviewer.jobs import precompile

    rec = tmp_path / "record.json"
    monkeypatch.setattr(precompile, "_record_path", lambda: rec)
    ident = precompile._identity()
    for text in ("null", "[]", json.dumps({**ident, "tasks": None}),
                 json.dumps({**ident, "tasks": {t.name: 7 for t in precompile.tasks()}}),
                 json.dumps({**ident, "tasks": {t.name: [[1, 2]]
                                                for t in precompile.tasks()}})):
        rec.write_text(text)
        st = precompile.cache_status()
        assert not st["warm"] and st["missing"], text  # cold: compiled again, no crash


def test_session_that_is_not_an_object(tmp_path):
    from xpcsviewer.gui.session import load_session

    p = tmp_path / "session.json"
    for text in ("null", "[1]", "[" * 100_000):
        p.write_text(text)
        data, why = load_session(p)
        assert data == {} and str(p) in why
