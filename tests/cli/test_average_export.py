"""``xpcsviewer average`` and ``xpcsviewer export`` end to end (in-process CLI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.io import read_result, write_result
from xpcsviewer.synthetic.results import build_result

SIGNATURES = {"png": (b"\x89PNG",), "svg": (b"<svg", b"<?xml"), "pdf": (b"%PDF",)}


def _spec(shape=(48, 48), twotime=False, damage=False, dq=5):
    spec = {
        "name": "t",
        "geometry": {"shape": shape, "bcx": shape[1] / 2, "bcy": shape[0] / 2},
        "partition": {"dq_num": dq, "sq_num": 20},
        "acquisition": {"frame_time": 1e-3, "n_frames": 2000},
        "analysis": ("Multitau", "Twotime") if twotime else ("Multitau",),
    }
    if twotime:
        spec["twotime"] = {"n_frames": 40, "bins": [1, 2]}
    if damage:
        spec["sample"] = {"model": "damage", "damage_time_s": 1.0}
    return spec


def make(path: Path, seed=0, **kw) -> Path:
    res, extra = build_result(_spec(**kw), seed=seed)
    res.path = path
    write_result(path, res, saxs_2d=extra["saxs_2d"], c2_maps=extra.get("c2_maps"))
    return path


@pytest.fixture
def repeats(tmp_path):
    return [make(tmp_path / f"rep{i}_results.hdf", seed=i) for i in range(4)]


# ----------------------------------------------------------------------------- average
def test_average_cli_writes_and_summarises(tmp_path, repeats, capsys):
    out = tmp_path / "avg.hdf"
    rc = main(
        [
            "average",
            *map(str, repeats),
            "-o",
            str(out),
            "--error-method",
            "sem",
            "--quiet",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "accepted 4 of 4 files (errors: sem)" in text and str(out) in text
    res = read_result(out)
    ref = np.mean([read_result(p).multitau.g2 for p in repeats], axis=0)
    np.testing.assert_allclose(res.multitau.g2, ref, rtol=1e-6)


def test_average_cli_rejects_with_reason(tmp_path, repeats, capsys):
    res, extra = build_result(_spec(), seed=9)
    res.multitau.g2 = (
        res.multitau.g2 + 0.5
    )  # the whole curve shifted: baseline far from 1
    bad2 = tmp_path / "high_results.hdf"
    res.path = bad2
    write_result(bad2, res, saxs_2d=extra["saxs_2d"])
    rc = main(
        [
            "average",
            *map(str, repeats),
            str(bad2),
            "-o",
            str(tmp_path / "a.hdf"),
            "--baseline-q-index",
            "0",
            "--baseline-window",
            "5",
            "--baseline-range",
            "0.9",
            "1.1",
            "--mad-threshold",
            "6",
            "--quiet",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "accepted 4 of 5" in text
    assert f"rejected {bad2}: baseline" in text


def test_average_cli_screens_by_default_and_no_reject_switches_it_off(tmp_path, repeats, capsys):
    res, extra = build_result(_spec(), seed=9)
    res.multitau.g2 = res.multitau.g2 + 0.5  # a damaged repeat: baseline near 1.5
    bad = tmp_path / "damaged_results.hdf"
    res.path = bad
    write_result(bad, res, saxs_2d=extra["saxs_2d"])
    files = [*map(str, repeats), str(bad)]

    rc = main(["average", *files, "-o", str(tmp_path / "a.hdf"), "--quiet"])
    captured = capsys.readouterr()
    assert rc == 0
    assert "screening: reject a file whose baseline" in captured.out and "5 MADs" in captured.out
    assert "accepted 4 of 5" in captured.out
    assert f"rejected {bad}:" in captured.out
    ref = np.mean([read_result(p).multitau.g2 for p in repeats], axis=0)
    assert np.abs(read_result(tmp_path / "a.hdf").multitau.g2 - ref).max() < 0.05

    rc = main(["average", *files, "-o", str(tmp_path / "b.hdf"), "--no-reject", "--quiet"])
    captured = capsys.readouterr()
    assert rc == 0
    assert "screening: off" in captured.out
    assert "accepted 5 of 5" in captured.out


def test_average_cli_bad_inputs(tmp_path, repeats, capsys):
    junk = tmp_path / "junk.hdf"
    junk.write_bytes(b"nope")
    missing = tmp_path / "missing.hdf"
    rc = main(
        [
            "average",
            str(repeats[0]),
            str(junk),
            str(missing),
            "-o",
            str(tmp_path / "o.hdf"),
            "--quiet",
        ]
    )
    assert rc == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and str(junk) in err[0] and str(missing) in err[1]
    assert not (tmp_path / "o.hdf").exists()

    other = make(tmp_path / "other_results.hdf", dq=7)
    rc = main(
        [
            "average",
            *map(str, repeats),
            str(other),
            "-o",
            str(tmp_path / "o.hdf"),
            "--quiet",
        ]
    )
    assert rc == 3
    err = capsys.readouterr().err
    assert "cannot average" in err and str(other) in err and str(repeats[0]) in err

    assert (
        main(
            [
                "average",
                str(repeats[0]),
                str(repeats[1]),
                "-o",
                str(repeats[0]),
                "--quiet",
            ]
        )
        == 2
    )
    assert "one of the input files" in capsys.readouterr().err
    assert (
        main(
            [
                "average",
                str(repeats[0]),
                "-o",
                str(tmp_path / "o.hdf"),
                "--baseline-q-index",
                "99",
                "--quiet",
            ]
        )
        == 2
    )
    with pytest.raises(SystemExit) as info:
        main(["average", str(repeats[0]), "-o", "x.hdf", "--error-method", "median"])
    assert info.value.code == 2


# ----------------------------------------------------------------------------- export
@pytest.fixture(scope="module")
def export_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("exp")
    return [
        make(d / "a_results.hdf", seed=1, twotime=True, damage=True),
        make(d / "b_results.hdf", seed=2),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_export_every_kind_valid_files(tmp_path, export_files, fmt, capsys):
    kinds = [
        "saxs2d",
        "saxs1d",
        "stability",
        "intensity",
        "g2",
        "diffusion",
        "twotime",
        "qmap",
    ]
    args = [
        "export",
        *map(str, export_files),
        "--format",
        fmt,
        "-o",
        str(tmp_path),
        "--quiet",
    ]
    for k in kinds:
        args += ["--plot", k]
    assert main(args) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "skipped twotime" in err and "b_results.hdf" in err  # b has no two-time data
    expect = {f"combined_{k}.{fmt}" for k in ("saxs1d", "intensity", "g2", "diffusion")}
    expect |= {
        f"{lab}_{k}.{fmt}"
        for lab in ("a", "b")
        for k in ("saxs2d", "stability", "qmap")
    }
    expect.add(f"a_twotime.{fmt}")
    names = {p.name for p in tmp_path.iterdir()}
    assert names == expect
    for name in names:
        head = (tmp_path / name).read_bytes()[:64]
        assert head.startswith(SIGNATURES[fmt]), (name, head[:16])


@pytest.mark.slow
def test_export_bad_file_reported_rest_exported(tmp_path, export_files, capsys):
    junk = tmp_path / "junk.hdf"
    junk.write_bytes(b"\x00" * 10)
    out = tmp_path / "figs"
    rc = main(
        [
            "export",
            str(export_files[1]),
            str(junk),
            "--plot",
            "g2",
            "--plot",
            "qmap",
            "-o",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 3
    err = capsys.readouterr().err
    assert str(junk) in err
    assert sorted(p.name for p in out.iterdir()) == ["b_qmap.png", "combined_g2.png"]
    assert (out / "combined_g2.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_export_fits_g2_before_drawing(tmp_path, export_files, monkeypatch):
    import xpcsviewer.export as export_pkg
    from xpcsviewer.commands.export import export_figures
    from xpcsviewer.views.diffusion import diffusion_analysis

    seen = {}
    real = export_pkg.make_figure

    def spy(kind, results, **options):
        seen[kind] = (len(results), options)
        return real(kind, results, **options)

    monkeypatch.setattr(export_pkg, "make_figure", spy)
    rep = export_figures(export_files, ["g2", "diffusion", "qmap"], tmp_path / "o")
    assert rep.ok and len(rep.written) == 4
    n, opts = seen["g2"]
    fits = opts["fits"]
    # one fit shared by both figures: diffusion is handed its D(q) analysis
    analysis = seen["diffusion"][1]["analysis"]
    assert n == 2 and set(seen["diffusion"][1]) == {"analysis"}
    want = diffusion_analysis(fits)
    assert len(analysis.laws) == len(want.laws) == 2
    for got, exp in zip(analysis.laws, want.laws, strict=True):
        np.testing.assert_array_equal(got.points.q, exp.points.q)
        np.testing.assert_array_equal(got.verdict.free.prefactor, exp.verdict.free.prefactor)
    assert fits.model == "auto" and fits.method == "lsq"  # as fit, report and the window
    assert np.mean(np.isfinite(fits.params["tau"])) > 0.8
    assert "fits" not in seen["qmap"][1]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_export_g2map_g2stability_one_figure_per_file(
    tmp_path, demo_set_dir, fmt, capsys
):
    import shutil

    damaged = demo_set_dir / "E01_beam_damage_R250nm_results.hdf"
    second = tmp_path / "in" / "E02_damage_copy_results.hdf"
    second.parent.mkdir()
    shutil.copy(damaged, second)
    plain = demo_set_dir / "A01_silica_R100nm_water_results.hdf"  # no partial g2
    twotime = demo_set_dir / "C01_ageing_gel_twotime_results.hdf"  # no multitau
    out = tmp_path / "figs"
    args = ["export", str(damaged), str(second), str(plain), str(twotime)]
    args += ["--plot", "g2map", "--plot", "g2stability", "--format", fmt]
    assert main([*args, "-o", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "skipped g2stability" in err and plain.name in err
    assert "skipped g2map" in err and twotime.name in err
    labels = [read_result(p).label for p in (damaged, second, plain)]
    expect = {f"{lab}_g2map.{fmt}" for lab in labels}
    expect |= {f"{lab}_g2stability.{fmt}" for lab in labels[:2]}
    names = {p.name for p in out.iterdir()}
    assert names == expect
    for name in names:
        head = (out / name).read_bytes()[:64]
        assert head.startswith(SIGNATURES[fmt]), (name, head[:16])
