"""``correlate --exclude-frames`` and ``--mask`` (issue 45): excluded frames are dropped
from the frame stream as if the file had never held them, on every path; a mask file is
ANDed into the q-map's mask and recorded."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.spec import (
    CorrelateSpec,
    FrameSelection,
    PlanRequest,
    SpecError,
    parse_frame_ranges,
)

SHAPE = (24, 32)
N = 72
EXCLUDE = "10-14,40,66-71"  # a block inside, one frame, the run's last frames


def _excluded(n: int, blocks) -> np.ndarray:
    drop = np.zeros(n, bool)
    for a, b in blocks:
        drop[a:b + 1] = True
    return drop


def _hits(movie: np.ndarray):
    flat = movie.reshape(movie.shape[0], -1)
    f, p = np.nonzero(flat)
    return f, p, flat[f, p]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The same movie as dense HDF5 and ImageD11 sparse, whole and with the excluded
    frames removed by hand, and its q-map."""
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.synthetic.sparse_files import write_id11_sparse

    d = tmp_path_factory.mktemp("exclude")
    qm = geometry_partition(SHAPE, DetectorGeometry(beam_center_x=-5.0, beam_center_y=-5.0,
                                                    detector_distance=5.0, pixel_size=75e-6,
                                                    energy_kev=10.0), None, PartitionGrid(4, 8))
    write_qmap_file(d / "qmap.h5", qm, source_file="test", overwrite=True)
    rng = np.random.default_rng(7)
    # a slow intensity drift makes frames distinguishable: a frame off by one shows
    rate = 0.08 * (1 + 0.5 * np.sin(np.arange(N) / 5.0))
    movie = rng.poisson(rate[:, None, None] * np.ones(SHAPE)).astype(np.uint16)
    cut = movie[~_excluded(N, parse_frame_ranges(EXCLUDE))]
    out = {"qmap": d / "qmap.h5", "movie": movie}
    for name, m in (("whole", movie), ("cut", cut)):
        with h5py.File(d / f"{name}_dense.h5", "w") as f:
            f["/entry/data/data"] = m
        write_id11_sparse(d / f"{name}_sparse.h5", *_hits(m), SHAPE, n_frames=m.shape[0])
        out[name] = {"dense": d / f"{name}_dense.h5", "sparse": d / f"{name}_sparse.h5"}
    return out


def _datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            # numbers only: the config is compared apart, the texts hold paths and dates
            if (isinstance(obj, h5py.Dataset) and "config" not in name
                    and obj.dtype.kind in "fiub"):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def _config(path, group="xpcs/multitau/config"):
    with h5py.File(path, "r") as f:
        return {k: (v[()].decode() if isinstance(v[()], bytes) else v[()])
                for k, v in f[group].items()}


# --------------------------------------------------------------------------- spec
def test_frame_blocks_parse_merge_and_round_trip():
    assert parse_frame_ranges("40, 10-14,12-20,21,5") == ((5, 5), (10, 21), (40, 40))
    assert parse_frame_ranges([[3, 4], (0, 1)]) == ((0, 1), (3, 4))
    sel = FrameSelection(2, 90, 2, 3, "7-9,1")
    assert sel.exclude == ((1, 1), (7, 9)) and sel.n_excluded == 4
    assert "exclude=1,7-9" in sel.describe()
    spec = CorrelateSpec(mode="both", frames=sel)
    d = spec.as_dict()
    assert d["frames"]["exclude"] == ((1, 1), (7, 9))
    assert CorrelateSpec.from_dict(d) == spec
    # a batch's task travels as JSON-like lists
    d["frames"]["exclude"] = [[7, 9], [1, 1]]
    assert CorrelateSpec.from_dict(d) == spec
    for bad in ("5-3", "x", "-2", "1-2-3"):
        with pytest.raises(SpecError, match="--exclude-frames"):
            FrameSelection(exclude=bad)


# ------------------------------------------------------------------------ readers
def _reference(movie, begin, end, stride, avg, blocks):
    """Processed frames by hand: raw frames begin:end less the blocks, then every
    stride-th, then means of avg."""
    end = movie.shape[0] if end == -1 else end
    frames = [i for i in range(begin, end) if not any(a <= i <= b for a, b in blocks)]
    frames = frames[::stride]
    n = len(frames) // avg
    sel = movie[frames[: n * avg]].astype(np.float64)
    return sel.reshape(n, avg, *movie.shape[1:]).mean(axis=1)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("sel", [(0, -1, 1, 1), (3, 70, 1, 2), (1, -1, 3, 1), (5, 60, 2, 3)])
def test_reader_drops_the_excluded_frames(files, kind, sel):
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.io.raw.sparse import dense_frames

    blocks = parse_frame_ranges(EXCLUDE)
    want = _reference(files["movie"], *sel, blocks)
    begin, end, stride, avg = sel
    with open_raw_source(files["whole"][kind], shape=SHAPE, begin=begin, end=end,
                         stride=stride, avg=avg, exclude=blocks) as src:
        assert src.n_frames == want.shape[0]
        got = np.concatenate(list(src.iter_chunks(7)))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(src.read(4, 9), want[4:9])
        if kind == "sparse":
            ev = [dense_frames(b.start, b.stop, b.frame, b.pixel, b.value, SHAPE, np.float64)
                  for b in src.iter_events(max_events=40)]
            np.testing.assert_array_equal(np.concatenate(ev), want)
            # the hits the selection spans, less the excluded frames'
            a, b = int(src.kept[0]), int(src.kept[-1]) + 1
            inside = ~_excluded(N, blocks)[a:b]
            assert src.n_events == np.count_nonzero(files["movie"][a:b][inside])
        cfg = src.describe()
        assert cfg["excluded_frames"] and cfg["excluded_frame_count"] > 0


def test_dense_reader_never_reads_excluded_frames(files, monkeypatch):
    from xpcsviewer.io.raw import open_raw_source

    with open_raw_source(files["whole"]["dense"], exclude=((20, 59),)) as src:
        seen = []
        real = src._read_run

        def spy(a, n, out=None):
            seen.extend(range(a, a + n * src.stride, src.stride))
            return real(a, n, out)

        monkeypatch.setattr(src, "_read_run", spy)
        for _ in src.iter_chunks(16):
            pass
        assert seen == [*range(20), *range(60, N)]


def test_exclusions_refused_with_a_clear_message(files, tmp_path):
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    def job(sel, kind="dense"):
        return CorrelateJob(files["whole"][kind], files["qmap"], tmp_path / "o.hdf",
                            CorrelateSpec(frames=sel))

    with pytest.raises(SpecError, match=r"--exclude-frames 70-99: .*holds 72 frames"):
        correlate_file(job(FrameSelection(exclude="70-99")))
    with pytest.raises(XpcsFileError, match="leaves no frame"):
        correlate_file(job(FrameSelection(begin=10, end=20, exclude="5-25"), "sparse"))
    assert not (tmp_path / "o.hdf").exists()


def test_time_tag_event_list_refuses_exclusions(tmp_path):
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.synthetic.sparse_files import write_timepix

    p = write_timepix(tmp_path / "tpx.h5", np.array([1, 2, 3]), np.array([0, 1, 2]),
                      np.array([10, 20, 30]), 1e-6, (4, 4))
    with pytest.raises(ValueError, match="time-tag mode has none"):
        open_raw_source(p, exclude=((0, 5),))
    with open_raw_source(p, bin_time=1e-5, exclude=((0, 0),)) as src:
        assert src.n_frames == 2


# ---------------------------------------------------------------------------- job
@pytest.mark.parametrize("kind, path", [("dense", "auto"), ("sparse", "sparse")])
def test_exclusions_equal_the_frames_removed_by_hand(files, tmp_path, kind, path):
    """Multi-tau, two-time and the age x lag map, on the dense and on the photon path:
    the result with exclusions is the result of a file written without those frames."""
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    base = CorrelateSpec(mode="both", dq="1-2", ages=True, ages_points=4, frame_time=1e-3)
    spec = CorrelateSpec.from_dict({**base.as_dict(), "frames": {"exclude": EXCLUDE}})
    a = correlate_file(CorrelateJob(files["whole"][kind], files["qmap"], tmp_path / "a.hdf",
                                    spec, PlanRequest(path=path)))
    b = correlate_file(CorrelateJob(files["cut"][kind], files["qmap"], tmp_path / "b.hdf",
                                    base, PlanRequest(path=path)))
    assert a.n_frames == b.n_frames == N - 5 - 1 - 6
    assert a.plan.photons == b.plan.photons == (kind == "sparse")
    assert a.notes[0].startswith("12 frames excluded in 3 blocks (10-14,40,66-71)")
    da, db = _datasets(a.output), _datasets(b.output)
    assert da.keys() == db.keys()
    assert any("age_lag" in k for k in da) and any("c2_" in k for k in da)
    for k in da:
        np.testing.assert_allclose(da[k], db[k], rtol=0, atol=1e-12, err_msg=k)
    cfg = _config(a.output)
    assert cfg["excluded_frames"] == "10-14,40,66-71"
    assert cfg["excluded_frame_count"] == 12 and cfg["excluded_blocks"] == 3
    assert "excluded_frames" not in _config(b.output)


def test_cli_flags_reach_the_job(files, tmp_path, capsys):
    from xpcsviewer.io.masks import write_mask_file

    mask = np.ones(SHAPE, bool)
    mask[:4, :] = False
    write_mask_file(tmp_path / "m.h5", mask)
    out = tmp_path / "cli.hdf"
    assert main(["correlate", str(files["whole"]["dense"]), "--qmap", str(files["qmap"]),
                 "-o", str(out), "--exclude-frames", EXCLUDE, "--mask",
                 str(tmp_path / "m.h5")]) == 0
    err = capsys.readouterr().err
    assert "note: 12 frames excluded in 3 blocks" in err
    cfg = _config(out)
    assert cfg["excluded_frames"] == "10-14,40,66-71" and cfg["mask_file"].endswith("m.h5")
    # a bad block is a usage error before any file is opened
    assert main(["correlate", str(tmp_path / "none.h5"), "--qmap", str(files["qmap"]), "-o",
                 str(tmp_path / "x.hdf"), "--exclude-frames", "9-3"]) == 2
    assert "--exclude-frames: block 9-3" in capsys.readouterr().err


# ---------------------------------------------------------------------------- mask
def test_mask_file_equals_the_qmap_masked_by_hand(files, tmp_path):
    import dataclasses

    from xpcsviewer.io.masks import write_mask_file
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    qm = read_qmap(files["qmap"])
    own = np.asarray(qm.mask) > 0
    mask = np.random.default_rng(2).random(SHAPE) > 0.3
    np.save(tmp_path / "mask.npy", mask.astype(np.uint8))
    by_hand = dataclasses.replace(qm, mask=own & mask, hash="")
    write_qmap_file(tmp_path / "hand.h5", by_hand, source_file="test", overwrite=True)
    spec = CorrelateSpec(mode="both", dq="1")
    a = correlate_file(CorrelateJob(files["whole"]["dense"], files["qmap"], tmp_path / "a.hdf",
                                    spec, mask=tmp_path / "mask.npy"))
    b = correlate_file(CorrelateJob(files["whole"]["dense"], tmp_path / "hand.h5",
                                    tmp_path / "b.hdf", spec))
    da, db = _datasets(a.output), _datasets(b.output)
    assert da.keys() == db.keys()
    for k in da:
        np.testing.assert_array_equal(da[k], db[k], err_msg=k)
    cfg = _config(a.output)
    assert cfg["mask_file"] == str((tmp_path / "mask.npy").resolve())
    assert cfg["mask_removed_pixels"] == int((own & ~mask).sum()) > 0
    assert "mask_file" not in _config(b.output)
    # a mask file given as an input is never the output
    write_mask_file(tmp_path / "m.h5", mask)
    from xpcsviewer.io.outputs import OutputRefusedError

    with pytest.raises(OutputRefusedError):
        correlate_file(CorrelateJob(files["whole"]["dense"], files["qmap"], tmp_path / "m.h5",
                                    spec, overwrite=True, mask=tmp_path / "m.h5"))


def test_mask_file_errors_name_the_file_and_what_was_expected(files, tmp_path):
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    def run(mask):
        return correlate_file(CorrelateJob(files["whole"]["dense"], files["qmap"],
                                           tmp_path / "o.hdf", CorrelateSpec(), mask=mask))

    np.save(tmp_path / "small.npy", np.ones((8, 8), np.uint8))
    with pytest.raises(XpcsFileError) as e:
        run(tmp_path / "small.npy")
    text = str(e.value)
    assert "small.npy" in text and "(8, 8)" in text and "24x32" in text and "qmap.h5" in text
    np.save(tmp_path / "none.npy", np.zeros(SHAPE, np.uint8))
    with pytest.raises(XpcsFileError, match=r"none\.npy.*leaves no pixel inside the q-bins"):
        run(tmp_path / "none.npy")
    with pytest.raises(XpcsFileError, match=r"missing\.npy"):
        run(tmp_path / "missing.npy")
    assert not (tmp_path / "o.hdf").exists()


def test_a_batch_takes_both_flags(files, tmp_path):
    """Several RAW files (the batch's task, plain values) get the mask and exclusions."""
    np.save(tmp_path / "m.npy", np.ones(SHAPE, np.uint8))
    raws = [str(files["whole"]["dense"]), str(files["whole"]["sparse"])]
    assert main(["correlate", *raws, "--qmap", str(files["qmap"]), "-o", str(tmp_path / "o"),
                 "--mask", str(tmp_path / "m.npy"), "--exclude-frames", "0-1", "--quiet"]) == 0
    for name in ("whole_dense_results.hdf", "whole_sparse_results.hdf"):
        cfg = _config(tmp_path / "o" / name)
        assert cfg["excluded_frames"] == "0-1" and cfg["n_frames"] == N - 2
        assert cfg["mask_file"] == str((tmp_path / "m.npy").resolve())
        assert cfg["mask_removed_pixels"] == 0
