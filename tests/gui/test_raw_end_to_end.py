"""Issue 45 as a user walks it, in one main window with its real worker threads: open a
raw file, let the Raw tab find its faults, mask the hot pixel and leave out the empty
frames with the tab's buttons, correlate from the dialog, and find the result on the g2
tab, correlated without that pixel and those frames: equal to the command line's result on
a copy of the file with those frames and that pixel physically removed (no exclusion and
no mask file involved).
(scripts/real_window_raw.sh walks the same path in a real X window with xdotool.)"""

from __future__ import annotations

import dataclasses

import h5py
import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

pytestmark = pytest.mark.gui

LEFT = Qt.MouseButton.LeftButton
N, H, W = 200, 24, 32
HOT = (10, 20)
EMPTY = (60, 79)
COSMIC_FRAME = 150


@pytest.fixture(scope="module")
def acquisition(tmp_path_factory):
    from xpcsviewer.cli import main
    from xpcsviewer.jobs._correlate_inputs import RAW_FRAME_TIME

    d = tmp_path_factory.mktemp("raw_e2e")
    rng = np.random.default_rng(3)
    frames = rng.poisson(0.5, (N, H, W)).astype(np.uint16)
    frames[:, HOT[0], HOT[1]] = 200 + rng.poisson(20, N)
    frames[EMPTY[0]:EMPTY[1] + 1] = 0
    frames[COSMIC_FRAME, 3:6, 3:6] = 40
    path = d / "run.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/data", data=frames)
        f[RAW_FRAME_TIME] = 1e-3
    # NAME_qmap.h5 beside it: found by the window, as the demo's are
    assert main(["qmap", "--shape", str(H), str(W), "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "16", "--bcy", "12", "--dq-num", "3",
                 "--sq-num", "6", "-o", str(d / "run_qmap.h5"), "--quiet"]) == 0
    return path, frames


def test_open_find_mask_exclude_correlate(window, qtbot, acquisition, tmp_path, wait_idle):
    from xpcsviewer.cli import main
    from xpcsviewer.gui.correlate_dialog import CorrelateDialog
    from xpcsviewer.gui.panels.detector import MASK_KEY
    from xpcsviewer.gui.raw_sources import RAW_CURRENT_KEY
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.jobs._correlate_inputs import RAW_FRAME_TIME

    path, frames = acquisition
    window.open_paths([str(path)])
    raw = window.panels["raw"]
    assert window.current_panel() is raw
    assert window.context.shared[RAW_CURRENT_KEY].path == str(path)
    qtbot.waitUntil(lambda: raw.inspection is not None, timeout=60000)
    wait_idle(window, 60000)
    fs = raw.inspection.findings
    kinds = {f.kind for f in fs}
    assert {"hot_pixel", "empty_frames", "cosmic"} <= kinds, [f.kind for f in fs]
    (hot,) = [i for i, f in enumerate(fs) if f.kind == "hot_pixel"]
    assert [tuple(p) for p in fs[hot].pixels] == [HOT]
    (empty,) = [i for i, f in enumerate(fs) if f.kind == "empty_frames"]
    assert tuple(fs[empty].frames) == EMPTY
    (cosmic,) = [i for i, f in enumerate(fs) if f.kind == "cosmic"]
    assert fs[cosmic].frames[0] == COSMIC_FRAME

    # "Mask these" on the hot pixel: the Detector tab's mask of this source loses it
    raw.faults.select_rows([hot])
    QTest.mouseClick(raw.faults.mask_btn, LEFT)
    wait_idle(window, 20000)
    qm = read_qmap(path.parent / "run_qmap.h5")
    qmask = np.asarray(qm.mask, bool)
    shared = window.context.shared[MASK_KEY]
    assert shared.path == str(path)
    assert np.array_equal(shared.mask, qmask & ~_one(HOT))
    # the empty block left out of correlations
    raw.faults.select_rows([empty])
    QTest.mouseClick(raw.faults.exclude_btn, LEFT)

    QTest.mouseClick(raw.correlate_btn, LEFT)
    (dlg,) = [w for w in window.findChildren(CorrelateDialog) if w.isVisible()]
    assert dlg.mask_combo.currentData() == "detector"
    assert dlg.exclude_edit.text() == f"{EMPTY[0]}-{EMPTY[1]}"
    out = tmp_path / "run_results.hdf"
    dlg.output_edit.setText(str(out))
    qtbot.waitUntil(lambda: f"{N - (EMPTY[1] - EMPTY[0] + 1)} of {N} frames"
                    in dlg.plan_label.text(), timeout=30000)
    QTest.mouseClick(dlg.run_btn, LEFT)
    wait_idle(window, 120000)
    assert dlg.outcome is not None, dlg.status.text()
    qtbot.waitUntil(lambda: window.results and str(window.results[0].path) == str(out),
                    timeout=30000)
    qtbot.waitUntil(lambda: window.current_panel() is window.panels["g2"], timeout=10000)
    dlg.close()

    # the same job on a copy with those frames and that pixel physically removed
    keep = np.ones(N, bool)
    keep[EMPTY[0]:EMPTY[1] + 1] = False
    ref_dir = tmp_path / "removed"
    ref_dir.mkdir()
    with h5py.File(ref_dir / "run.h5", "w") as f:
        f.create_dataset("/entry/data/data", data=frames[keep])
        f[RAW_FRAME_TIME] = 1e-3
    hot = _one(HOT)
    removed = dataclasses.replace(
        qm, mask=qmask & ~hot,
        dynamic_roi_map=np.where(hot, 0, qm.dynamic_roi_map),
        static_roi_map=np.where(hot, 0, qm.static_roi_map))
    write_qmap_file(ref_dir / "run_qmap.h5", removed)
    ref = ref_dir / "ref_results.hdf"
    assert main(["correlate", str(ref_dir / "run.h5"), "--qmap", str(ref_dir / "run_qmap.h5"),
                 "-o", str(ref), "--quiet"]) == 0
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
        cfg = f["xpcs/multitau/config"]
        assert cfg["excluded_frames"][()].decode() == f"{EMPTY[0]}-{EMPTY[1]}"
        assert cfg["mask_removed_pixels"][()] == 1
        for key in ("normalized_g2", "normalized_g2_err", "delay_list"):
            np.testing.assert_allclose(f[f"xpcs/multitau/{key}"][()],
                                       g[f"xpcs/multitau/{key}"][()], rtol=1e-12, atol=0)
        # and the hot pixel did change its bin: the mask was not a no-op
        b = int(qm.dynamic_roi_map[HOT])
        assert b > 0


def _one(rc):
    m = np.zeros((H, W), bool)
    m[rc] = True
    return m
