"""The install step's JAX fill (xpcsviewer.jobs.precompile_jax): a fresh compilation
cache gets the fit programs, and a later fit in a fresh process loads them instead of
compiling (counted by backends.jax_backend.compile_counts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xpcsviewer.jobs.precompile_jax import GROUPS, fill_programs, groups_wanted

REPO = Path(__file__).resolve().parents[2]

_FIT_PROBE = r"""
import json, sys
from xpcsviewer.cli import main
rc = main(sys.argv[1:])
from xpcsviewer.backends.jax_backend import compile_counts
print(json.dumps({"rc": rc, **compile_counts()}))
"""


def test_groups_from_the_environment(monkeypatch):
    monkeypatch.delenv("XPCS_PRECOMPILE_JAX", raising=False)
    assert groups_wanted() == GROUPS
    assert groups_wanted("lsq") == ("lsq",)
    assert groups_wanted("nuts") == ("nuts-cli", "nuts-gui")
    assert groups_wanted("off") == ()
    monkeypatch.setenv("XPCS_PRECOMPILE_JAX", "0")
    assert groups_wanted() == ()
    with pytest.raises(ValueError, match="XPCS_PRECOMPILE_JAX='sometimes'"):
        groups_wanted("sometimes")


def test_off_and_no_cache_compile_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("XPCS_JAX_CACHE_DIR", "off")
    assert "cache is off" in fill_programs(("lsq",))["skipped"]
    monkeypatch.setenv("XPCS_JAX_CACHE_DIR", str(tmp_path / "c"))
    res = fill_programs(())
    assert res["skipped"] == "XPCS_PRECOMPILE_JAX=off" and res["groups"] == {}


def test_a_failing_group_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("XPCS_JAX_CACHE_DIR", str(tmp_path / "c"))
    from xpcsviewer.jobs import precompile_jax

    with pytest.raises(ValueError, match="unknown JAX program groups"):
        fill_programs(("nonsense",))
    with pytest.raises(ValueError, match="unknown JAX program group 'nonsense'"):
        precompile_jax.run_group("nonsense")
    # a child that fails: the error names its group and its last line
    monkeypatch.setattr(precompile_jax, "PROGRAM", "xpcsviewer.no_such_module")
    with pytest.raises(RuntimeError, match=r"lsq \(exit 1: .*no_such_module"):
        fill_programs(("lsq",))


def _env(cache: Path) -> dict[str, str]:
    # every program written (the 0.2 s threshold would leave out the fast ones)
    return dict(os.environ, XPCS_JAX_CACHE_DIR=str(cache), XPCS_JAX_CACHE_MIN_COMPILE_S="0",
                JAX_PLATFORMS="cpu", XPCS_PRECOMPILE_JAX="lsq")


@pytest.mark.slow
def test_fill_then_a_fit_loads_rather_than_compiles(tmp_path):
    from xpcsviewer.synthetic.demo import write_demo

    cache = tmp_path / "jax-cache"
    env = _env(cache)
    out = subprocess.run([sys.executable, "-m", "xpcsviewer.commands._precompile", "--jax",
                          "--json"], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-800:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert list(res["groups"]) == ["lsq"]
    assert res["entries"][0] == 0 and res["entries"][1] > 0
    assert res["groups"]["lsq"]["compiled"] > 0

    write_demo(tmp_path / "demo", seed=0, names=["A02_silica_R250nm_water"], workers=1)
    f = next((tmp_path / "demo").glob("A02_*_results.hdf"))
    fit = subprocess.run([sys.executable, "-c", _FIT_PROBE, "fit", str(f), "-o",
                          str(tmp_path / "f.json"), "--quiet"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert fit.returncode == 0, fit.stderr[-800:]
    counts = json.loads(fit.stdout.strip().splitlines()[-1])
    # the least squares of a real file: every program comes from the install's fill
    assert counts["compiled"] > 0
    assert counts["cache_hits"] == counts["compiled"], counts
