"""The one correlation job (issue 44): a checked spec, one plan, one file job that the
command line and the batch call alike and that prints nothing."""

from __future__ import annotations

import dataclasses

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.spec import (
    CorrelateSpec,
    Engine,
    FrameSelection,
    PlanRequest,
    SpecError,
)


def test_engine_words_are_one_vocabulary():
    assert Engine.parse("numba") is Engine.COMPILED
    assert Engine.parse("compiled") is Engine.COMPILED
    for word in ("backend", "numpy", "blas", "array"):
        assert Engine.parse(word) is Engine.ARRAY
    assert Engine.parse("XLA") is Engine.XLA
    assert Engine.parse(Engine.AUTO) is Engine.AUTO
    with pytest.raises(SpecError, match="engine must be one of auto, compiled, xla, array"):
        Engine.parse("cuda")
    assert PlanRequest(engine="numba").engine is Engine.COMPILED


@pytest.mark.parametrize("kw, flag", [
    ({"mode": "ages"}, "--mode"),
    ({"frame_time": -1.0}, "--frame-time"),
    ({"frame_time": float("nan")}, "--frame-time"),
    ({"bin_time": 0.0}, "--bin-time"),
    ({"num_partial_g2": -1}, "--num-partial-g2"),
    ({"dq": "3-1"}, "--dq"),
    ({"dq": "x"}, "--dq"),
    ({"save_g2_pixel": True, "mode": "twotime"}, "--save-g2-pixel"),
    ({"ages": True, "ages_points": 0}, "--twotime-ages-points"),
    ({"groups": -1}, "--twotime-groups"),
    ({"groups": 2, "group_tile": 0, "mode": "both"}, "--group-tile"),
    ({"groups": 2}, "--twotime-groups needs"),
    ({"frames": FrameSelection(0, -1, 1, 1), "smooth": "pixel"}, "smooth"),
])
def test_spec_refuses_a_bad_setting_naming_it(kw, flag):
    with pytest.raises(SpecError) as e:
        CorrelateSpec(**kw)
    assert flag in str(e.value)


@pytest.mark.parametrize("sel, flag", [((-1, -1, 1, 1), "--begin-frame"),
                                       ((0, -2, 1, 1), "--end-frame"),
                                       ((0, -1, 0, 1), "stride"), ((0, -1, 1, 0), "avg")])
def test_frame_selection_checked(sel, flag):
    with pytest.raises(SpecError, match=flag):
        FrameSelection(*sel)


def test_spec_round_trips_as_plain_values():
    spec = CorrelateSpec(mode="both", dq="1-3,5", frames=FrameSelection(2, 90, 2, 3),
                         frame_time=1e-3, normalize_frame=True, num_partial_g2=4,
                         ages=True, ages_points=4, groups=3, group_tile=5)
    d = spec.as_dict()
    assert d["frames"] == {"begin": 2, "end": 90, "stride": 2, "avg": 3, "exclude": ()}
    assert CorrelateSpec.from_dict(d) == spec


@pytest.mark.parametrize("flags, text", [
    (["--frame-time", "-1"], "--frame-time must be a positive finite number"),
    (["--dq", "5-2"], "--dq: bad bin range"),
    (["--twotime-groups", "2"], "--twotime-groups needs"),
    (["--engine", "xla", "--mode", "twotime", "--save-g2-pixel"], "--save-g2-pixel needs"),
    (["--begin-frame", "-3"], "--begin-frame must be >= 0"),
])
def test_flags_are_checked_before_any_file_is_opened(tmp_path, capsys, flags, text):
    # neither input exists: a flag's refusal must come first, naming the flag
    code = main(["correlate", str(tmp_path / "missing.h5"), "--qmap",
                 str(tmp_path / "missing_qmap.h5"), "-o", str(tmp_path / "o.hdf"), *flags])
    err = capsys.readouterr().err
    assert code == 2, err
    assert text in err and "missing" not in err
    assert not (tmp_path / "o.hdf").exists()


@pytest.fixture(scope="module")
def dense_raw(tmp_path_factory):
    """A small dense raw file and its q-map (Poisson speckle-free frames)."""
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.io.results.writer import write_qmap_file

    d = tmp_path_factory.mktemp("job")
    shape = (24, 32)
    qm = geometry_partition(shape, DetectorGeometry(beam_center_x=-5.0, beam_center_y=-5.0,
                                                    detector_distance=5.0, pixel_size=75e-6,
                                                    energy_kev=10.0), None, PartitionGrid(4, 8))
    write_qmap_file(d / "qmap.h5", qm, source_file="test", overwrite=True)
    rng = np.random.default_rng(3)
    frames = rng.poisson(2.0, size=(64, *shape)).astype(np.uint16)
    with h5py.File(d / "raw.h5", "w") as f:
        f["/entry/data/data"] = frames
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    return d / "raw.h5", d / "qmap.h5"


def _datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and "time" not in name and "path" not in name:
                out[name] = obj[()]
        f.visititems(visit)
    return out


def test_file_job_prints_nothing_and_equals_the_command(dense_raw, tmp_path, capsys):
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    raw, qmap = dense_raw
    spec = CorrelateSpec(mode="both", dq="1-2", frames=FrameSelection(2, -1, 1, 2),
                         num_partial_g2=2)
    seen = []
    job = CorrelateJob(raw, qmap, tmp_path / "job.hdf", spec)
    done = correlate_file(job, progress=lambda *a: seen.append(a))
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert seen and done.output == tmp_path / "job.hdf" and done.n_frames == 31
    assert done.plan.engine.engine is Engine.COMPILED and done.plan.backend == "numpy"
    assert "two-time 2 bins of 31x31" in done.summary
    assert main(["correlate", str(raw), "--qmap", str(qmap), "-o", str(tmp_path / "cli.hdf"),
                 "--mode", "both", "--dq", "1-2", "--begin-frame", "2", "--avg-frame", "2",
                 "--num-partial-g2", "2", "--quiet"]) == 0
    a, b = _datasets(tmp_path / "job.hdf"), _datasets(tmp_path / "cli.hdf")
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray) and a[k].dtype.kind in "fiub":
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_plan_records_itself_and_refuses_what_the_source_cannot_take(dense_raw, tmp_path):
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file
    from xpcsviewer.jobs.correlate_plan import plan_correlate

    raw, qmap = dense_raw
    qm = read_qmap(qmap)
    with open_raw_source(raw, shape=qm.shape) as src:
        plan = plan_correlate(src, qm, CorrelateSpec(mode="twotime", dq="2"),
                              PlanRequest(engine="compiled"), device="cpu")
        cfg = plan.as_config()
        assert cfg["backend"] == "numpy" and cfg["engine"] == "compiled"
        assert cfg["device"] == "cpu" and "path" not in cfg  # a dense source has no choice
        assert plan.bins.tolist() == [2] and plan.ages_bins is None
        assert "compiled engine on the CPU" in plan.describe()
        with pytest.raises(SpecError, match="--path sparse needs a photon-sparse"):
            plan_correlate(src, qm, CorrelateSpec(), PlanRequest(path="sparse"))
        with pytest.raises(SpecError, match=r"--dq: dynamic bins \[9\] are outside 1..4"):
            plan_correlate(src, qm, CorrelateSpec(mode="twotime", dq="9"), PlanRequest())
    # the same refusal from the job, before anything is written
    job = CorrelateJob(raw, qmap, tmp_path / "o.hdf", CorrelateSpec(ages=True, dq="9"))
    with pytest.raises(SpecError, match="--dq"):
        correlate_file(job)
    assert not (tmp_path / "o.hdf").exists()


def test_batch_task_builds_the_same_job(dense_raw, tmp_path):
    from xpcsviewer.jobs.correlate_batch import correlate_task

    raw, qmap = dense_raw
    spec = CorrelateSpec(mode="multitau", normalize_frame=True)
    options = {"qmap": str(qmap), "spec": spec.as_dict(),
               "request": {"path": "auto", "engine": "auto", "device": None}}
    item = {"path": str(raw), "output": str(tmp_path / "b.hdf"), "shown_output": "b.hdf"}
    got = correlate_task(options, item)
    assert got["skipped"] is False and got["bytes"] > 0
    assert main(["correlate", str(raw), "--qmap", str(qmap), "-o", str(tmp_path / "c.hdf"),
                 "--normalize-frame", "--quiet"]) == 0
    a, b = _datasets(tmp_path / "b.hdf"), _datasets(tmp_path / "c.hdf")
    np.testing.assert_array_equal(a["xpcs/multitau/normalized_g2"],
                                  b["xpcs/multitau/normalized_g2"])
    # a setting this file cannot take is the batch's usage error (exit 2), not a crash
    from xpcsviewer.batch import UsageError

    bad = {**options, "spec": dataclasses.replace(spec, mode="twotime", dq="7").as_dict()}
    with pytest.raises(UsageError, match=r"outside 1\.\.4"):
        correlate_task(bad, {**item, "output": str(tmp_path / "d.hdf")})


def test_live_holds_a_spec():
    from xpcsviewer.jobs.live import LiveOptions

    opts = LiveOptions(spec=CorrelateSpec(frame_time=2e-3, normalize_frame=True),
                       engine="backend")
    assert opts.frame_time == 2e-3 and opts.normalize_frame and opts.engine is Engine.ARRAY
    with pytest.raises(SpecError, match="multi-tau only"):
        LiveOptions(spec=CorrelateSpec(mode="both"))


def test_nothing_below_the_plan_sees_auto(dense_raw, tmp_path, monkeypatch):
    """The plan resolves the engine; the correlators of a job get it, never ``auto``."""
    from xpcsviewer.compute import pipeline
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    raw, qmap = dense_raw
    seen = []
    for name in ("correlate_multitau", "correlate_twotime"):
        real = getattr(pipeline, name)

        def spy(*a, _real=real, _name=name, **kw):
            seen.append((_name, Engine.parse(kw["engine"])))
            return _real(*a, **kw)

        monkeypatch.setattr(pipeline, name, spy)
    correlate_file(CorrelateJob(raw, qmap, tmp_path / "o.hdf", CorrelateSpec(mode="both")))
    assert [n for n, _ in seen] == ["correlate_multitau", "correlate_twotime"]
    assert all(e is Engine.COMPILED for _, e in seen), seen
