"""``correlate --twotime-groups K [--group-tile PX]``: the group maps in the result file."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.compute.twotime.groups import MAX_GROUP_FRAMES, group_maps
from xpcsviewer.io.results.twotime_groups import read_twotime_groups


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, small_movie):
    return small_movie(tmp_path_factory.mktemp("groups_cli"), 120, 0.5)


def _run(*argv):
    return main(["correlate", *map(str, argv), "--quiet"])


def test_flag_writes_the_group_maps_of_the_selected_frames(inputs, tmp_path):
    qm, qpath, movie, npy = inputs
    out = tmp_path / "g.hdf"
    assert _run(npy, "--qmap", qpath, "-o", out, "--mode", "both", "--dq", "1,3",
                "--twotime-groups", "4", "--group-tile", "5", "--begin-frame", "10",
                "--stride-frame", "2", "--frame-time", "0.01") == 0
    g = read_twotime_groups(out)
    assert g.bins.tolist() == [1, 3] and g.n_groups == 4 and g.tile_px == 5 and g.seed == 0
    ref = group_maps(FrameStream(lambda: iter([movie[10::2]]), 55),
                     Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                     CorrelateSpec(mode="twotime", dq=[1, 3], groups=4, group_tile=5))
    np.testing.assert_array_equal(g.pixels, ref.pixels)
    for a, b in zip(g.maps, ref.maps, strict=True):
        assert a.shape == (4, 55, 55)
        np.testing.assert_array_equal(np.triu(a[0]), np.triu(b[0].astype(np.float64)))


def test_default_is_none_and_bad_uses_are_refused(inputs, tmp_path, capsys):
    _qm, qpath, _movie, npy = inputs
    out = tmp_path / "plain.hdf"
    assert _run(npy, "--qmap", qpath, "-o", out, "--mode", "twotime", "--dq", "1") == 0
    import h5py

    with h5py.File(out, "r") as f:
        assert "groups" not in f["/xpcs/twotime"]
    assert _run(npy, "--qmap", qpath, "-o", tmp_path / "m.hdf", "--mode", "multitau",
                "--twotime-groups", "4") == 2
    assert "--twotime-groups needs --mode twotime or both, or --twotime-ages" in \
        capsys.readouterr().err
    assert _run(npy, "--qmap", qpath, "-o", tmp_path / "n.hdf", "--mode", "twotime",
                "--twotime-groups", "-1") == 2
    assert "need K >= 0" in capsys.readouterr().err
    assert MAX_GROUP_FRAMES == 2048


def test_memory_of_the_group_maps_is_counted(inputs, tmp_path, monkeypatch, capsys):
    _qm, qpath, _movie, npy = inputs
    from xpcsviewer.jobs import correlate_plan as plan

    # twotime on 120 frames needs ~0.23 MB; 4 groups x 2 bins of 120^2 float32 0.46 MB more
    monkeypatch.setattr(plan, "memory_available", lambda: 500_000)
    assert _run(npy, "--qmap", qpath, "-o", tmp_path / "a.hdf", "--mode", "twotime",
                "--dq", "1,3") == 0
    assert _run(npy, "--qmap", qpath, "-o", tmp_path / "b.hdf", "--mode", "twotime",
                "--dq", "1,3", "--twotime-groups", "4") == 1
    assert "with 4 pixel groups need about" in capsys.readouterr().err


def test_ages_reads_the_groups_for_its_tau_errors(inputs, tmp_path, monkeypatch):
    # a file with group maps: `ages` takes each cut's tau error from the groups' spread
    # and says so; the same file's cuts without them keep the fit's error
    import json

    from xpcsviewer.jobs.ages import ages_file

    _qm, qpath, _movie, npy = inputs
    out = tmp_path / "g.hdf"
    assert _run(npy, "--qmap", qpath, "-o", out, "--mode", "twotime", "--dq", "2,3",
                "--twotime-groups", "6", "--group-tile", "4", "--frame-time", "0.01") == 0
    assert main(["ages", str(out), "--windows", "2", "-o", str(tmp_path / "a.csv"),
                 "--json", str(tmp_path / "a.json"), "--quiet"]) == 0
    rec = json.loads((tmp_path / "a.json").read_text())["files"][0]
    assert rec["tau_error_source"] == "pixel groups (6)"
    with_groups = ages_file(out, n_windows=2)
    without = ages_file(out, n_windows=2, groups=None)
    assert without.fits.tau_err_source == "fit"
    np.testing.assert_array_equal(with_groups.fits.tau, without.fits.tau)
    both = np.isfinite(with_groups.fits.tau_err) & np.isfinite(without.fits.tau_err)
    assert both.any()
    assert not np.allclose(with_groups.fits.tau_err[both], without.fits.tau_err[both])
    # the exported figure says where its tau bars come from (a reader of the PDF has
    # no JSON beside it)
    from xpcsviewer.export.figures import make_figure
    from xpcsviewer.io import read_result
    from xpcsviewer.jobs.ages_bin import bin_request, run_ages

    res = read_result(out)
    # the second bin: the first's tau (0.7 s) is beyond what its cuts of the 1.2 s run
    # hold, so its taus are lower limits and keep the fit's errors (issue 48)
    ages = run_ages(bin_request(res, 1, n=2))
    titles = [ax.get_title() for ax in make_figure("ages", [res], ages=ages).axes]
    assert any(t.endswith("errors: pixel groups (6)") for t in titles), titles
    titles = [ax.get_title() for ax in
              make_figure("ages", [res], ages=ages, size="single").axes]
    assert any(t.endswith("\nerrors: groups (6)") for t in titles), titles
    import xpcsviewer.jobs.ages as jobs_ages

    monkeypatch.setattr(jobs_ages, "read_groups", lambda *a, **k: None)
    ages = run_ages(bin_request(res, 1, n=2))
    titles = [ax.get_title() for ax in make_figure("ages", [res], ages=ages).axes]
    assert not any("errors:" in t for t in titles), titles


def test_info_names_the_group_maps(inputs, tmp_path, capsys):
    import json

    _qm, qpath, _movie, npy = inputs
    out = tmp_path / "g.hdf"
    plain = tmp_path / "p.hdf"
    assert _run(npy, "--qmap", qpath, "-o", out, "--mode", "twotime", "--dq", "1,3",
                "--twotime-groups", "5", "--group-tile", "4") == 0
    assert _run(npy, "--qmap", qpath, "-o", plain, "--mode", "twotime", "--dq", "1") == 0
    capsys.readouterr()
    assert main(["info", str(out), str(plain)]) == 0
    text = capsys.readouterr().out
    assert ("note: g.hdf: two-time maps of 5 pixel groups (4-px tiles) for bins 1, 3"
            in text)
    assert "p.hdf: two-time maps" not in text
    assert main(["info", str(out), str(plain), "--json"]) == 0
    recs = json.loads(capsys.readouterr().out)["files"]
    assert recs[0]["twotime_groups"] == {"n_groups": 5, "tile_px": 4, "bins": [1, 3]}
    assert recs[1]["twotime_groups"] is None
