"""Raw sources never hang and never read outside the input: a FIFO, an external link, a
virtual dataset or external raw storage leaving the input's folder, and a growing file
truncated or replaced while followed each end in a clear error within seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw import RAW_DATASET, open_raw_source

ESRF = "entry_0000/measurement/data"
PY = [sys.executable, "-m", "xpcsviewer"]


@pytest.fixture
def folders(tmp_path):
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    with h5py.File(outside / "other.h5", "w") as f:
        f[f"{ESRF}/index"] = np.array([1, 2, 3, 4], np.int32)
        f["y"] = np.array([1, 2], np.uint16)
        f["frames"] = np.ones((4, 8, 8), np.uint16)
    (outside / "raw.bin").write_bytes(np.array([1, 2, 3, 4], np.int32).tobytes())
    return inside, outside


def _esrf(path, index):
    with h5py.File(path, "w") as f:
        g = f.create_group(ESRF)
        g.attrs["shape"] = (8, 8)
        g["frame_ptr"] = np.array([0, 2, 4])
        index(g)
        g["intensity"] = np.ones(4, np.uint16)
    return path


def _vds(g, name, src, path, shape=(4,), dtype=np.int32):
    lay = h5py.VirtualLayout(shape=shape, dtype=dtype)
    lay[:] = h5py.VirtualSource(src, path, shape=shape)
    g.create_virtual_dataset(name, lay)


def _refused(path, *words):
    with pytest.raises(XpcsFileError) as exc:
        open_raw_source(path).read(0, 2)
    text = str(exc.value)
    assert path.name in text and all(w in text for w in words), text


def test_links_and_sources_leaving_the_folder_are_refused(folders):
    inside, _ = folders
    other = "../out/other.h5"
    _refused(_esrf(inside / "a_sparse_frame_0_00000.h5",
                   lambda g: g.__setitem__("index", h5py.ExternalLink(other, f"{ESRF}/index"))),
             "external link", "outside the input's folder")
    _refused(_esrf(inside / "b_sparse_frame_0_00000.h5",
                   lambda g: _vds(g, "index", other, f"{ESRF}/index")),
             "virtual dataset", "outside the input's folder")
    _refused(_esrf(inside / "c_sparse_frame_0_00000.h5",
                   lambda g: g.create_dataset("index", (4,), np.int32,
                                              external=[("../out/raw.bin", 0, 16)])),
             "external raw file", "not read")
    with h5py.File(inside / "tpx.h5", "w") as f:
        f["x"] = np.array([1, 2], np.uint16)
        f["y"] = h5py.ExternalLink(os.path.abspath(inside.parent / "out/other.h5"), "y")
        f["toa"] = np.array([0.0, 1e-6])
        f.attrs["detector_shape"] = (8, 8)
    _refused(inside / "tpx.h5", "/y", "external link")
    with h5py.File(inside / "id11.h5", "w") as f:
        g = f.create_group("1.1")
        g.attrs["shape0"], g.attrs["shape1"] = 8, 8
        g["nnz"] = np.array([2, 2])
        g["col"] = np.array([1, 2, 3, 4])
        g["intensity"] = np.ones(4)
        _vds(g, "row", other, f"{ESRF}/index")
    _refused(inside / "id11.h5", "/1.1/row", "virtual dataset")
    with h5py.File(inside / "dense.h5", "w") as f:
        f[RAW_DATASET] = h5py.ExternalLink(other, "frames")
    _refused(inside / "dense.h5", "external link", "outside")


def test_a_missing_virtual_source_is_an_error_and_a_link_beside_the_input_is_read(folders):
    inside, _ = folders
    _refused(_esrf(inside / "m_sparse_frame_0_00000.h5",
                   lambda g: _vds(g, "index", "gone.h5", f"{ESRF}/index")),
             "gone.h5", "does not exist")
    # Eiger style: a master file linking frames in a file beside it
    with h5py.File(inside / "frames_data.h5", "w") as f:
        f["data"] = np.arange(4 * 8 * 8, dtype=np.uint16).reshape(4, 8, 8)
    with h5py.File(inside / "master.h5", "w") as f:
        f[RAW_DATASET] = h5py.ExternalLink("frames_data.h5", "data")
    with open_raw_source(inside / "master.h5") as src:
        assert src.read(0, 4).sum() == np.arange(4 * 8 * 8).sum()


def _run(args, cwd, timeout=60):
    t = time.monotonic()
    p = subprocess.run(PY + args, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    return p.returncode, p.stderr, time.monotonic() - t


@pytest.mark.parametrize("name", ["fifo.bin", "fifo.h5"])
def test_a_fifo_is_refused_at_once(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    with pytest.raises(XpcsFileError, match="named pipe"):
        open_raw_source(fifo)
    from xpcsviewer.cli import main

    assert main(["qmap", "--shape", "8", "8", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "4", "--bcy", "4", "-o",
                 str(tmp_path / "q.hdf"), "--quiet"]) == 0
    for args in (["info", name], ["correlate", name, "--qmap", "q.hdf", "-o", "o.hdf"],
                 ["live", name, "--qmap", "q.hdf", "-o", "l.hdf", "--idle", "1",
                  "--start-wait", "2"]):
        rc, err, took = _run(args, tmp_path)
        assert rc == 3 and "named pipe" in err and took < 30, (args, rc, err)


def _words(n):
    f = np.repeat(np.arange(n, dtype=np.uint64), 3)
    p = np.tile(np.array([5, 70, 900], np.uint64), n)
    return ((f << np.uint64(40)) | (p << np.uint64(16)) | np.uint64(1)).astype("<u8").tobytes()


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_a_growing_bin_truncated_or_replaced_is_refused(tmp_path, how):
    from xpcsviewer.cli import main
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs.live import LiveOptions, follow

    q = tmp_path / "q.hdf"
    assert main(["qmap", "--shape", "512", "1024", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "20", "--bcy", "20", "--dq-num", "2",
                 "--sq-num", "4", "-o", str(q), "--quiet"]) == 0
    raw = tmp_path / "scan.bin"
    raw.write_bytes(_words(400))

    seen = threading.Event()  # spoil only what the follower has read (not a race on load)

    def spoil() -> None:
        seen.wait(15)
        time.sleep(0.1)
        if how == "truncated":
            os.truncate(raw, 8 * 300)
        else:
            tmp = tmp_path / "new.bin"
            tmp.write_bytes(_words(500))
            os.replace(tmp, raw)

    th = threading.Thread(target=spoil)
    th.start()
    t = time.monotonic()
    try:
        with pytest.raises(XpcsFileError, match=r"shorter than before|replaced"):
            follow(raw, read_qmap(q), tmp_path / "o.hdf",
                   LiveOptions(idle=5, poll=0.05, every=0.2),
                   on_update=lambda _u: seen.set())
    finally:
        th.join()
    assert time.monotonic() - t < 20


def test_a_growing_swmr_csr_file_truncated_after_its_writer_died_ends(tmp_path):
    """The CSR twin of issue 34's SWMR hang: a writer killed, the file cut to half."""
    script = tmp_path / "writer.py"
    script.write_text(f"""
import time, h5py, numpy as np
f = h5py.File({str(tmp_path / 'grow.h5')!r}, 'w', libver='latest')
g = f.create_group({ESRF!r}); g.attrs['shape'] = (8, 8)
ptr = g.create_dataset('frame_ptr', data=np.array([0]), maxshape=(None,), chunks=(64,))
idx = g.create_dataset('index', (0,), np.int32, maxshape=(None,), chunks=(64,))
val = g.create_dataset('intensity', (0,), np.uint16, maxshape=(None,), chunks=(64,))
f.swmr_mode = True
n = 0
while True:
    for d, v in ((idx, [3, 9]), (val, [1, 2])):
        d.resize((n + 2,)); d[n:] = v; d.flush()
    n += 2
    ptr.resize((ptr.shape[0] + 1,)); ptr[-1] = n; ptr.flush()
    time.sleep(0.002)
""")
    w = subprocess.Popen([sys.executable, str(script)])
    grow = tmp_path / "grow.h5"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not grow.exists()
                                               or grow.stat().st_size < 20_000):
            time.sleep(0.1)
        time.sleep(1.0)
    finally:
        w.kill()
        w.wait()
    os.truncate(grow, grow.stat().st_size // 2)
    from xpcsviewer.cli import main

    assert main(["qmap", "--shape", "8", "8", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "4", "--bcy", "4", "-o",
                 str(tmp_path / "q.hdf"), "--quiet"]) == 0
    rc, err, took = _run(["live", "grow.h5", "--qmap", "q.hdf", "-o", "l.hdf", "--idle", "3",
                          "--start-wait", "5"], tmp_path, timeout=90)
    assert took < 60 and rc in (0, 3), (rc, err)
    # the frames whose hits survived, and a note saying the rest was left out
    assert "left out" in err and "wrote l.hdf" in err, err


def test_sources_stay_inside_even_through_a_folder_of_blocks(folders):
    inside, _ = folders
    _esrf(inside / "s_sparse_frame_0_00000.h5",
          lambda g: g.__setitem__("index", np.array([1, 2, 3, 4], np.int32)))
    _esrf(inside / "s_sparse_frame_0_00001.h5",
          lambda g: g.__setitem__("index", h5py.ExternalLink("../out/other.h5",
                                                             f"{ESRF}/index")))
    with pytest.raises(XpcsFileError, match="outside the input's folder"):
        open_raw_source(inside)
    assert Path(inside).is_dir()
