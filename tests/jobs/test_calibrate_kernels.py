"""`device --calibrate` on a fresh install (found on the H200, 2026-11-27): filling a
cold numba cache one group at a time at low priority, silently, took over 120 s before
any measurement. The calibration now compiles several groups at once at normal priority
and says each one."""

import io
import json

import pytest


class _Proc:
    """A stand-in for the precompile child: prints what the real one prints."""

    def __init__(self, cmd, **kw):
        _Proc.cmd = cmd
        groups = ["photons", "dense", "twotime"]
        lines = [json.dumps({"progress": [0, 3, "compiling kernels"]})]
        lines += [json.dumps({"progress": [i + 1, 3, g]}) for i, g in enumerate(groups)]
        lines += [json.dumps({"progress": [1, 1, "kernels compiled"]}),
                  json.dumps({"ran": groups, "tasks": {}, "seconds": {}})]
        self.stdout = io.StringIO("\n".join(lines) + "\n")
        self.returncode = 0

    def poll(self):
        return 0

    def wait(self):
        return 0


@pytest.fixture
def cold(monkeypatch):
    import subprocess

    from xpcsviewer.jobs import precompile

    monkeypatch.setattr(precompile, "available", lambda: True)
    monkeypatch.setattr(precompile, "cache_status", lambda: {
        "warm": False, "cache_dir": "/nowhere", "missing": ["a", "b", "c"], "reason": "t"})
    monkeypatch.setattr(precompile, "guard_cache_writes", lambda: True)
    monkeypatch.setattr(subprocess, "Popen", _Proc)
    return precompile


def test_the_gui_fill_stays_one_group_at_low_priority(cold):
    cold.ensure_kernels()
    cmd = _Proc.cmd
    assert cmd[cmd.index("--jobs") + 1] == "1" and "--nice" in cmd


def test_calibrate_compiles_groups_at_once_and_says_each(cold, monkeypatch):
    from xpcsviewer.jobs import calibrate

    monkeypatch.setattr(calibrate.os, "cpu_count", lambda: 16)
    said: list[str] = []
    # the measurements themselves are not this test's: stop right after the kernels
    monkeypatch.setattr(calibrate, "_multitau", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        calibrate.calibrate(nuts=False, say=said.append, devices=("cpu",))
    cmd = _Proc.cmd
    assert cmd[cmd.index("--jobs") + 1] == "4" and "--nice" not in cmd
    assert said[0] == "numba kernels as installed ..."
    assert said[1:] == ["  compiled photons (1/3)", "  compiled dense (2/3)",
                        "  compiled twotime (3/3)"]
