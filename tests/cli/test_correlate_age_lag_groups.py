"""``correlate --mode multitau --twotime-ages --twotime-groups K``: the age x lag maps of
the pixel groups (runs of any length) in the file, and ``ages`` reading its tau errors
from them (issue 35)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from xpcsviewer.cli import main


@pytest.fixture(scope="module")
def made(tmp_path_factory, small_movie):
    d = tmp_path_factory.mktemp("alg_cli")
    qm, qpath, movie, npy = small_movie(d, 300, 0.5)
    out = d / "g.hdf"
    assert main(["correlate", str(npy), "--qmap", str(qpath), "-o", str(out), "--mode",
                 "multitau", "--twotime-ages", "--twotime-groups", "6", "--group-tile", "4",
                 "--frame-time", "0.01", "--quiet"]) == 0
    return qm, movie, out


def test_the_file_holds_the_groups_maps_of_the_same_frames(made):
    from xpcsviewer.compute.ages.correlator_groups import age_lag_groups
    from xpcsviewer.compute.options import AgesOptions
    from xpcsviewer.compute.spec import CorrelateSpec
    from xpcsviewer.io.results.age_lag import read_age_lag
    from xpcsviewer.io.results.age_lag_groups import read_age_lag_groups

    qm, movie, out = made
    amap = read_age_lag(out)
    g = read_age_lag_groups(out)
    assert g.n_groups == 6 and g.tile_px == 4 and g.bins.tolist() == amap.bins.tolist()
    ref = age_lag_groups(movie, qm, CorrelateSpec(dq=g.bins, ages=True, groups=6, group_tile=4),
                         options=AgesOptions(frame_time=0.01))
    np.testing.assert_array_equal(g.pixels, ref.pixels)
    for a, b in zip(g.amap.levels, ref.amap.levels, strict=True):
        np.testing.assert_allclose(a.c, b.c.astype(np.float32), rtol=1e-6, equal_nan=True)
    assert g.amap.frame_time == amap.frame_time


def test_ages_takes_its_tau_errors_from_the_groups(made, tmp_path):
    from xpcsviewer.jobs.ages import ages_file

    _qm, _movie, out = made
    assert main(["ages", str(out), "--windows", "2", "-o", str(tmp_path / "a.csv"),
                 "--json", str(tmp_path / "a.json"), "--quiet"]) == 0
    rec = json.loads((tmp_path / "a.json").read_text())["files"][0]
    assert rec["tau_error_source"] == "pixel groups (6)"
    with_groups = ages_file(out, n_windows=2)
    without = ages_file(out, n_windows=2, groups=None)
    assert with_groups.source == "age_lag" and without.fits.tau_err_source == "fit"
    # the groups judge the residual tests and the model choice against the lags'
    # correlated noise; where both chose the same model the fitted tau is the same
    same = with_groups.fits.model == without.fits.model
    assert same.sum() >= same.size // 2
    np.testing.assert_array_equal(with_groups.fits.tau[same], without.fits.tau[same])
    both = np.isfinite(with_groups.fits.tau_err) & np.isfinite(without.fits.tau_err)
    assert both.any()
    assert not np.allclose(with_groups.fits.tau_err[both], without.fits.tau_err[both])


def test_groups_need_a_map_to_go_with(made, tmp_path, capsys):
    _qm, _movie, out = made
    npy = out.parent / "movie.npy"
    qpath = out.parent / "qmap.hdf"
    assert main(["correlate", str(npy), "--qmap", str(qpath), "-o", str(tmp_path / "m.hdf"),
                 "--mode", "multitau", "--twotime-groups", "4", "--quiet"]) == 2
    assert "--twotime-groups needs --mode twotime or both, or --twotime-ages" in \
        capsys.readouterr().err


def test_info_names_the_age_lag_group_maps(made, capsys):
    _qm, _movie, out = made
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "age x lag maps of 6 pixel groups (4-px tiles)" in text
    assert main(["info", str(out), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    rec = rec[0] if isinstance(rec, list) else rec.get("files", [rec])[0]
    assert rec["age_lag_groups"]["n_groups"] == 6 and rec["twotime_groups"] is None
