"""The window's correlate form (issue 45): the same job, file and config as
``xpcsviewer correlate`` with the same settings; a cancelled run leaves nothing."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.jobs.correlate_form import CorrelateForm, default_output, run_form

SHAPE = (24, 32)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """A dense raw file and a partition (in memory, as the Detector tab holds one)."""
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry

    d = tmp_path_factory.mktemp("form")
    qm = geometry_partition(SHAPE, DetectorGeometry(beam_center_x=-5.0, beam_center_y=-5.0,
                                                    detector_distance=5.0, pixel_size=75e-6,
                                                    energy_kev=10.0), None, PartitionGrid(4, 8))
    frames = np.random.default_rng(5).poisson(1.5, size=(90, *SHAPE)).astype(np.uint16)
    with h5py.File(d / "run.h5", "w") as f:
        f["/entry/data/data"] = frames
    return d / "run.h5", qm


def _file(path):
    """(numeric datasets, config groups) of a result file."""
    data, config = {}, {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            if name.split("/")[-2:-1] == ["config"]:
                v = obj[()]
                config[name] = v.decode() if isinstance(v, bytes) else v
            elif obj.dtype.kind in "fiub":
                data[name] = obj[()]
        f.visititems(visit)
    return data, config


def test_form_runs_the_command_s_job(raw, tmp_path):
    """The dialog's job function and ``xpcsviewer correlate`` with the same settings
    write the same datasets and the same config."""
    path, qm = raw
    mask = np.ones(SHAPE, bool)
    mask[:, :5] = False
    form = CorrelateForm(raw=str(path), output=str(tmp_path / "gui" / "run_results.hdf"),
                         drawn_qmap=qm, mask=mask, begin=3, stride=1, avg=2,
                         exclude="20-29,61", mode="both", dq="1-2", ages=True,
                         ages_points=4, frame_time=2e-3)
    seen = []
    done = run_form(form, progress=lambda *a: seen.append(a))
    qmap_file = tmp_path / "gui" / "run_results_qmap.hdf"
    mask_file = tmp_path / "gui" / "run_results_mask.hdf"
    assert done.output == tmp_path / "gui" / "run_results.hdf" and seen
    assert set(done.side_files) == {qmap_file, mask_file}
    assert done.outcome.notes[0].startswith("11 frames excluded in 2 blocks")
    cli = ["correlate", str(path), "--qmap", str(qmap_file), "-o", str(tmp_path / "cli.hdf"),
           "--mask", str(mask_file), "--mode", "both", "--frame-time", "0.002",
           "--begin-frame", "3", "--avg-frame", "2", "--exclude-frames", "20-29,61",
           "--dq", "1-2", "--twotime-ages", "--twotime-ages-points", "4"]
    assert form.command()[1:] == [*cli[:5], str(form.output), *cli[6:]]
    assert main([*cli, "--quiet"]) == 0
    (da, ca), (db, cb) = _file(done.output), _file(tmp_path / "cli.hdf")
    assert da.keys() == db.keys() and len(da) > 20
    for k in da:
        np.testing.assert_array_equal(da[k], db[k], err_msg=k)
    assert ca.keys() == cb.keys() and any(k.endswith("/mask_removed_pixels") for k in ca)
    for k in ca:
        assert np.array_equal(ca[k], cb[k]), (k, ca[k], cb[k])
    removed = [v for k, v in ca.items() if k.endswith("mask_removed_pixels")]
    own = np.asarray(qm.mask) > 0
    assert removed[0] == int((own & ~mask).sum()) > 0


class _CancelAfter:
    """A cancel token that is set after ``n`` progress reports (or as the job ends)."""

    def __init__(self, n):
        self.n, self.cancelled = n, False

    def progress(self, *_a):
        self.n -= 1
        if self.n <= 0:
            self.cancelled = True

    def raise_if_cancelled(self):
        from xpcsviewer.progress import Cancelled

        if self.cancelled:
            raise Cancelled()


@pytest.mark.parametrize("after", [1, 10**9])
def test_a_cancelled_run_leaves_nothing_behind(raw, tmp_path, monkeypatch, after):
    """Cancelled mid-run, or as the job finishes (the token set after the write): no
    result, no side file, no temporary."""
    from xpcsviewer.progress import Cancelled

    path, qm = raw
    out = tmp_path / "out"
    form = CorrelateForm(raw=str(path), output=str(out / "r.hdf"), drawn_qmap=qm,
                         mask=np.ones(SHAPE, bool), mode="both")
    token = _CancelAfter(after)

    def progress(*a):
        token.progress(*a)

    if after > 1:  # cancelled only when the job is done
        import xpcsviewer.jobs.correlate as job_mod

        real = job_mod.correlate_file

        def late(*a, **k):
            got = real(*a, **k)
            assert (out / "r.hdf").is_file()
            token.cancelled = True
            return got

        monkeypatch.setattr(job_mod, "correlate_file", late)
    with pytest.raises(Cancelled):
        run_form(form, progress=progress, cancel=token)
    assert sorted(os.listdir(out)) == []


def test_a_refused_output_writes_no_side_file(raw, tmp_path):
    from xpcsviewer.io.outputs import OutputRefusedError

    path, qm = raw
    (tmp_path / "r.hdf").write_bytes(b"old")
    form = CorrelateForm(raw=str(path), output=str(tmp_path / "r.hdf"), drawn_qmap=qm)
    with pytest.raises(OutputRefusedError, match="exists"):
        run_form(form)
    assert sorted(os.listdir(tmp_path)) == ["r.hdf"]
    # an existing side file is not replaced without overwrite either
    (tmp_path / "s_qmap.hdf").write_bytes(b"mine")
    form = CorrelateForm(raw=str(path), output=str(tmp_path / "s.hdf"), drawn_qmap=qm)
    with pytest.raises(OutputRefusedError, match=r"s_qmap\.hdf"):
        run_form(form)
    assert (tmp_path / "s_qmap.hdf").read_bytes() == b"mine"
    assert not (tmp_path / "s.hdf").exists()


def test_default_output_avoids_read_only_data_folders(tmp_path, monkeypatch):
    from xpcsviewer.jobs import correlate_form

    data = tmp_path / "data"
    data.mkdir()
    (data / "run.h5").write_bytes(b"")
    results = tmp_path / "results"
    results.mkdir()
    # the user's results folder first, a free name there
    (results / "run_results.hdf").write_bytes(b"")
    assert default_output(data / "run.h5", [results]) == results / "run_results_2.hdf"
    # else beside the raw file
    assert default_output(data / "run.h5", [None]) == data / "run_results.hdf"
    # never in a folder we cannot write (as root every folder is writable: the rule
    # is what is tested here): ~/xpcs_results then
    monkeypatch.setattr(correlate_form, "_writable", lambda f: f.is_dir() and f != data)
    assert default_output(data / "run.h5", [], home=tmp_path / "home") == \
        tmp_path / "home" / "xpcs_results" / "run_results.hdf"
