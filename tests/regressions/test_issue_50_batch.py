"""Issue 50, item 8: a batch `correlate` names the cause of a corrupt ESRF block as the
single-file command does (the damaged block file, not another reason)."""

from __future__ import annotations

import os

import numpy as np

from xpcsviewer.cli import main


def test_batch_names_a_truncated_esrf_block(tmp_path, capsys):
    from xpcsviewer.synthetic.sparse_files import write_esrf_csr

    rng = np.random.default_rng(0)
    n, h, w = 400, 16, 16
    frame = np.sort(rng.integers(0, n, 3000))
    pixel = rng.integers(0, h * w, frame.size)
    count = np.ones(frame.size, np.uint16)
    blocks = write_esrf_csr(tmp_path / "scan", frame, pixel, count, n_frames=n,
                            frames_per_block=100, shape=(h, w))
    other = tmp_path / "other"
    other.mkdir()
    good = write_esrf_csr(other / "run", frame, pixel, count, n_frames=n,
                          frames_per_block=100, shape=(h, w))
    qmap = tmp_path / "q.hdf"
    assert main(["qmap", "--shape", str(h), str(w), "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "8", "--bcy", "8", "--dq-num", "2",
                 "--sq-num", "4", "-o", str(qmap), "--quiet"]) == 0
    os.truncate(blocks[2], os.path.getsize(blocks[2]) // 2)
    capsys.readouterr()
    assert main(["correlate", str(blocks[0]), "--qmap", str(qmap), "-o",
                 str(tmp_path / "one.hdf"), "--quiet"]) == 3
    single = capsys.readouterr().err
    assert main(["correlate", str(blocks[0]), str(good[0]), "--qmap", str(qmap), "-o",
                 str(tmp_path / "out"), "--quiet"]) == 3
    batch = capsys.readouterr().err
    for err in (single, batch):
        assert blocks[2].name in err and "truncated" in err, err
    assert "1 of 2 file(s) failed" in batch
    assert (tmp_path / "out" / "run_00000_results.hdf").is_file()
