"""``xpcsviewer demo`` reuses a complete demo set and never replaces a file unasked.

The tiny three-file stand-in for DEMO_SPECS (``tiny_demo_specs`` in tests/conftest.py:
multi-tau, both analyses, a per-pixel G2 side file) keeps these tests under a second each.
"""

from __future__ import annotations

import pytest

from xpcsviewer.cli import main
from xpcsviewer.synthetic import demo as demo_mod

NAMES = ["T01_tiny_results.hdf", "T02_tiny_both_results.hdf", "T03_tiny_g2_results.hdf",
         "T03_tiny_g2_results_G2.hdf"]


@pytest.fixture
def calls(monkeypatch, tiny_demo_specs):
    """The tiny specs in place of the demo's; ``calls`` lists every simulated spec name."""
    monkeypatch.setattr(demo_mod, "DEMO_SPECS", tiny_demo_specs)
    made: list[str] = []
    real = demo_mod.simulate_result

    def counting(spec, **kw):
        made.append(spec["name"])
        return real(spec, **kw)

    monkeypatch.setattr(demo_mod, "simulate_result", counting)
    return made


def _demo(out, *extra):
    return main(["demo", "--no-gui", "--quiet", "--out", str(out), *extra])


def _state(out):
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.iterdir()}


def test_second_run_reuses_the_complete_set(tmp_path, calls, capsys):
    out = tmp_path / "demo"
    assert _demo(out) == 0
    assert sorted(calls) == ["T01_tiny", "T02_tiny_both", "T03_tiny_g2"]
    assert sorted(p.name for p in out.iterdir()) == NAMES
    before = _state(out)
    calls.clear()
    capsys.readouterr()
    assert _demo(out) == 0
    assert calls == []  # nothing simulated, nothing rewritten
    assert _state(out) == before
    assert "reused 3 complete demo files" in capsys.readouterr().out


def test_missing_file_is_simulated_alone(tmp_path, calls, capsys):
    out = tmp_path / "demo"
    assert _demo(out) == 0
    (out / NAMES[1]).unlink()
    before = _state(out)
    calls.clear()
    capsys.readouterr()
    assert _demo(out) == 0
    assert calls == ["T02_tiny_both"]
    after = _state(out)
    assert {k: after[k] for k in before} == before  # the others untouched
    assert "reused 2 complete demo file(s)" in capsys.readouterr().out
    for i, spec in enumerate(demo_mod.DEMO_SPECS):
        assert demo_mod.check_demo_file(out, spec, i, 0) is None


@pytest.mark.parametrize("spoil", ["truncate", "foreign", "no_record", "no_side", "orphan_side",
                                   "version", "seed"])
def test_damaged_or_foreign_file_refused_then_replaced_with_overwrite(
        tmp_path, calls, capsys, monkeypatch, spoil):
    out = tmp_path / "demo"
    assert _demo(out) == 0
    args: list[str] = []
    if spoil == "truncate":
        p = out / NAMES[0]
        p.write_bytes(p.read_bytes()[:2000])
        named, why = p, "cannot be opened as HDF5"
    elif spoil == "foreign":
        p = out / NAMES[1]
        p.write_text("my own notes, not a demo file\n")
        named, why = p, "cannot be opened as HDF5"
    elif spoil == "no_record":  # an HDF5 result file, but not one the demo wrote
        import h5py

        p = out / NAMES[0]
        with h5py.File(p, "r+") as f:
            del f["xpcs/demo"]
        named, why = p, "records no demo version (/xpcs/demo)"
    elif spoil == "no_side":
        (out / NAMES[3]).unlink()
        named, why = out / NAMES[2], "side file T03_tiny_g2_results_G2.hdf is missing"
    elif spoil == "orphan_side":
        (out / NAMES[2]).unlink()
        named, why = out / NAMES[3], "a G2 side file without its result file"
    elif spoil == "version":
        monkeypatch.setattr(demo_mod, "DEMO_VERSION", demo_mod.DEMO_VERSION + 1)
        named, why = out / NAMES[0], "another demo version"
    else:
        args = ["--seed", "1"]
        named, why = out / NAMES[0], "another seed (0, expected 1)"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    calls.clear()
    capsys.readouterr()
    assert _demo(out, *args) == 2
    err = capsys.readouterr().err
    assert f"{named}: " in err and why in err
    assert "use --overwrite" in err and "Traceback" not in err
    assert calls == []  # refused before anything was simulated
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # asked: the whole set is simulated again and replaced
    assert _demo(out, *args, "--overwrite") == 0
    assert sorted(calls) == ["T01_tiny", "T02_tiny_both", "T03_tiny_g2"]
    assert sorted(p.name for p in out.iterdir()) == NAMES
    seed = 1 if spoil == "seed" else 0
    for i, spec in enumerate(demo_mod.DEMO_SPECS):
        assert demo_mod.check_demo_file(out, spec, i, seed) is None
