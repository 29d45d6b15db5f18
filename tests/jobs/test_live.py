"""The live job follows real writers (processes and threads) and ends with what
``xpcsviewer correlate`` writes for the complete frames.

Writers: SWMR, a plain appending writer that reopens the file (with HDF5's lock) for
every block, a writer with a frame counter and a fixed length, a folder of block files,
and writers killed mid-chunk. 32 x 32 frames, a few thousand each: seconds per test.
"""

from __future__ import annotations

import threading

import h5py
import numpy as np
import pytest

from xpcsviewer.io.results.reader import read_qmap
from xpcsviewer.jobs.live import LiveOptions, follow
from xpcsviewer.synthetic.acquisition import frame_source, write_blocks, write_growing

FT = 1e-3  # s per frame


def _frames(n: int, seed: int = 0) -> np.ndarray:
    return np.concatenate(list(frame_source((32, 32), n, seed=seed)))


def _snapshots(out):
    """on_update that keeps (frames, multitau datasets, partial flag) of each partial file."""
    snaps = []

    def take(up):
        if up.final:
            return
        with h5py.File(out, "r") as f:
            snaps.append((up.frames, f["/xpcs/multitau/normalized_g2"][()],
                          f["/xpcs/multitau/normalized_g2_err"][()],
                          f["/xpcs/multitau/delay_list"][()],
                          f["/xpcs/spatial_mean/intensity_vs_time"][()],
                          bool(f["/xpcs/live/partial"][()])))
    return snaps, take


def _check_partials(snaps, raw, qmap, tmp_path, tools, n_check=2):
    """A partial result at n frames equals correlate of the first n frames."""
    assert snaps, "no partial update"
    picked = [snaps[0], snaps[-1]][:n_check]
    for n, g2, err, delays, itime, partial in picked:
        assert partial
        ref = tools.correlate_ref(raw, qmap, tmp_path / f"ref{n}.hdf", "--end-frame", str(n))
        d = tools.datasets(ref)
        np.testing.assert_array_equal(delays, d["xpcs/multitau/delay_list"])
        np.testing.assert_allclose(g2, d["xpcs/multitau/normalized_g2"], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(err, d["xpcs/multitau/normalized_g2_err"], rtol=1e-6,
                                   atol=1e-9)
        np.testing.assert_allclose(itime, d["xpcs/spatial_mean/intensity_vs_time"], rtol=1e-6)


def test_swmr_writer_process_partials_and_final_equal_batch(small_qmap, writer, tmp_path, tools):
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    ws = []

    def start(_event):  # the writer once the kernels are loaded (a loaded machine is slow)
        ws.append(writer(raw, "--frames", "3000", "--rate", "2500", "--mode", "swmr",
                         "--block", "40", "--extend-first", "--frame-time", str(FT)))

    snaps, take = _snapshots(out)
    final = follow(raw, read_qmap(small_qmap), out, LiveOptions(every=0.25, idle=5),
                   on_update=take, on_ready=start)
    w = ws[0]
    assert w.wait() == 0
    assert final.end == "closed" and final.frames == 3000 and final.final
    assert len(snaps) >= 2 and snaps[0][0] < 3000  # it followed, not read the end only
    assert max(w.stats["block_s"]) < 0.5  # no update held the writer up
    with h5py.File(out, "r") as f:
        assert not f["/xpcs/live/partial"][()] and f["/xpcs/live/end"][()] == b"closed"
    tools.assert_same_result(out, tools.correlate_ref(raw, small_qmap, tmp_path / "batch.hdf"))
    _check_partials(snaps, raw, small_qmap, tmp_path, tools)


def test_plain_writer_reopening_with_locks_is_never_blocked(small_qmap, writer, tmp_path, tools):
    # The writer opens the file with HDF5's lock for every block: a reader that held a
    # lock at that moment would make its open fail (exit code != 0). The dataset is
    # extended and flushed before the frames are written, in 4-frame chunks.
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    w = writer(raw, "--frames", "2400", "--rate", "2000", "--mode", "plain", "--reopen",
               "--block", "30", "--chunk-frames", "4", "--extend-first",
               "--frame-time", str(FT))
    snaps, take = _snapshots(out)
    final = follow(raw, read_qmap(small_qmap), out,
                   LiveOptions(every=0.25, idle=1.5, poll=0.02), on_update=take)
    assert w.wait() == 0, w.proc.stderr.read()
    # its lock comes and goes with each block: seen, it ends at the close, else by idle
    assert final.frames == 2400 and final.end in ("closed", "idle")
    assert max(w.stats["block_s"]) < 0.5
    tools.assert_same_result(out, tools.correlate_ref(raw, small_qmap, tmp_path / "batch.hdf"))
    _check_partials(snaps, raw, small_qmap, tmp_path, tools, n_check=1)


def test_counter_and_fixed_length_end_at_the_expected_count(small_qmap, tmp_path, tools):
    # a writer thread: frame counter dataset, dataset of fixed maximum length
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    th = threading.Thread(target=write_growing, args=(raw, frame_source((32, 32), 1500)),
                          kwargs={"rate": 3000, "shape": (32, 32), "mode": "plain", "block": 25,
                                  "chunk_frames": 8, "counter": True, "expected": 1500,
                                  "frame_time": FT})
    th.start()
    try:
        final = follow(raw, read_qmap(small_qmap), out, LiveOptions(every=0.2, idle=5))
    finally:
        th.join()
    assert final.end == "expected" and final.frames == final.expected == 1500
    tools.assert_same_result(out, tools.correlate_ref(raw, small_qmap, tmp_path / "batch.hdf"))


def test_folder_of_block_files(small_qmap, tmp_path, tools):
    folder, out = tmp_path / "scan", tmp_path / "live.hdf"
    th = threading.Thread(target=write_blocks, args=(folder, frame_source((32, 32), 2000)),
                          kwargs={"rate": 3000, "shape": (32, 32), "block": 150, "name": "scan",
                                  "frame_time": FT, "master": 2000})
    th.start()
    ups = []
    try:
        final = follow(folder, read_qmap(small_qmap), out, LiveOptions(every=0.2, idle=5),
                       on_update=ups.append)
    finally:
        th.join()
    assert final.end == "expected" and final.frames == 2000
    assert any(not u.final and u.frames < 2000 for u in ups)
    ref_raw = tools.write_raw(tmp_path / "all.h5", _frames(2000), FT)
    # the same frames in one file: the same result (the raw path differs, by nature)
    tools.assert_same_result(out, tools.correlate_ref(ref_raw, small_qmap, tmp_path / "b.hdf"),
                             skip=("xpcs/multitau/config/raw", "xpcs/rawdata_path"))


@pytest.mark.parametrize("mode", ["plain", "swmr"])
def test_writer_killed_mid_chunk_finishes_with_the_complete_frames(
        small_qmap, writer, tmp_path, tools, mode):
    # The writer extends by a 40-frame block, writes 17 of its frames (4-frame chunks:
    # the last chunk half written) and is killed (SIGKILL).
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    w = writer(raw, "--frames", "3000", "--rate", "3000", "--mode", mode, "--block", "40",
               "--chunk-frames", "4", "--die-after", "1217", "--frame-time", str(FT))
    final = follow(raw, read_qmap(small_qmap), out, LiveOptions(every=0.25, idle=1.5))
    assert w.wait() != 0  # killed
    assert final.frames == 1217
    if mode == "swmr":  # its superblock still says "open": it ends by the idle rule
        assert final.end == "idle" and "stopped or died" in final.note
    ref_raw = tools.write_raw(tmp_path / "cut.h5", _frames(1217), FT)
    tools.assert_same_result(out, tools.correlate_ref(ref_raw, small_qmap, tmp_path / "b.hdf"),
                             skip=("xpcs/multitau/config/raw", "xpcs/rawdata_path"))


def test_stop_finishes_with_the_frames_read_and_keeps_partial(small_qmap, tmp_path):
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    stop = threading.Event()
    th = threading.Thread(target=write_growing, args=(raw, frame_source((32, 32), 3000)),
                          kwargs={"rate": 2000, "shape": (32, 32), "mode": "swmr", "frame_time": FT,
                                  "on_block": lambda n: n >= 600 and stop.set()})
    th.start()
    try:
        final = follow(raw, read_qmap(small_qmap), out, LiveOptions(every=0.2), stop=stop)
    finally:
        th.join()
    assert final.end == "stopped" and 2 <= final.frames < 3000
    with h5py.File(out, "r") as f:
        assert f["/xpcs/live/partial"][()]
        assert f["/xpcs/live/frames"][()] == final.frames


def test_frames_of_another_shape_are_refused(tmp_path, small_qmap):
    from xpcsviewer.io.errors import XpcsFileError

    raw = tmp_path / "raw.h5"
    with h5py.File(raw, "w") as f:
        f["/entry/data/data"] = np.ones((10, 16, 16), np.uint16)
    with pytest.raises(XpcsFileError, match="q-map"):
        follow(raw, read_qmap(small_qmap), tmp_path / "o.hdf", LiveOptions(idle=0.5))


def test_no_frames_in_time(tmp_path, small_qmap):
    with pytest.raises(TimeoutError, match="no frame"):
        follow(tmp_path / "never.h5", read_qmap(small_qmap), tmp_path / "o.hdf",
               LiveOptions(start_wait=0.4, poll=0.05))


def test_a_non_finite_count_at_a_used_pixel_is_refused_by_name(tmp_path, small_qmap):
    from xpcsviewer.io.errors import XpcsFileError

    frames = np.ones((20, 32, 32), np.float32)
    frames[7, 16, 17] = np.nan  # inside the partition
    raw = tmp_path / "raw.h5"
    with h5py.File(raw, "w") as f:
        f["/entry/data/data"] = frames
    with pytest.raises(XpcsFileError, match=r"non-finite count in frame 7 at pixel \(16, 17\)"):
        follow(raw, read_qmap(small_qmap), tmp_path / "o.hdf", LiveOptions(idle=0.5))
