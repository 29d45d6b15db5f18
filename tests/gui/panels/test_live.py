"""The Live tab follows a writer thread without stalling the window; the Series tab
fits a run once per file and appends files as they are finished."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.gui

BOUND_S = 1.0  # as tests/gui/test_stalls.py: lenient for a loaded 2-core runner


@pytest.fixture(scope="module")
def qmap32(tmp_path_factory):
    from xpcsviewer.cli import main

    out = tmp_path_factory.mktemp("qmap") / "detector_qmap.hdf"
    assert main(["qmap", "--shape", "32", "32", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "16", "--bcy", "16", "--dq-num", "6",
                 "--sq-num", "24", "-o", str(out), "--quiet"]) == 0
    return out


def _writer_thread(raw, n, rate, mode="plain", seed=0):
    from xpcsviewer.synthetic.acquisition import frame_source, write_growing

    frames = list(frame_source((32, 32), n, kind="speckle", frame_time=1.0 / rate, seed=seed))
    stats = {}
    th = threading.Thread(target=lambda: stats.update(write_growing(
        raw, iter(frames), rate=rate, shape=(32, 32), mode=mode, block=50,
        frame_time=1.0 / rate)))
    return th, stats


def test_live_tab_follows_a_writer_without_stalls(window, qtbot, tmp_path, qmap32, wait_idle):
    import shutil

    from xpcsviewer.gui.heartbeat import Heartbeat

    raw = tmp_path / "scan.h5"
    shutil.copy(qmap32, tmp_path / qmap32.name)  # a q-map beside the raw file
    window.show_live()
    panel = window.panels["live"]
    assert window.current_panel() is panel and window.central.currentWidget() is window.tabs
    panel.every.setValue(0.4)
    panel.idle.setValue(2.0)
    th, stats = _writer_thread(raw, 3000, 1000)
    th.start()
    qtbot.waitUntil(raw.exists, timeout=10000)
    panel.set_source(str(raw))
    qtbot.waitUntil(lambda: panel.qmap_edit.text() != "", timeout=10000)
    assert panel.qmap_edit.text() == str(tmp_path / qmap32.name)  # found beside it
    beat = Heartbeat(10).start()
    t0 = time.monotonic()
    panel.start()
    assert panel.running and not panel.start_btn.isEnabled()
    seen_partial = []
    panel.sigUpdated.connect(
        lambda: seen_partial.append(panel.last_update.frames) if not panel.last_update.final
        else None)
    qtbot.waitUntil(lambda: not panel.running, timeout=60000)
    gap = beat.max_gap(t0)
    beat.stop()
    th.join()
    wait_idle(window, 60000)
    up = panel.final
    assert up is not None and up.final and up.frames == 3000
    assert seen_partial and min(seen_partial) < 3000  # drawn while the writer wrote
    assert up.bins and sum(b["status"] == "converged" for b in up.bins) >= 4
    assert panel.g2_items and all(it.xData.size for it in panel.g2_items.values())
    assert panel.fit_items and panel.tau_item.xData.size >= 4
    assert panel.trace_item.xData.size > 0
    # how it ended comes first (issue 33: it was hidden under the plots)
    assert panel.status.text().startswith("Finished (") and ": 3,000 frames" in panel.status.text()
    assert panel.g2_plot.getAxis("bottom").labelText == "\u03c4 (s)"  # the file's frame time
    print(f"max GUI gap while following: {1000 * gap:.0f} ms")
    assert gap < BOUND_S, f"the window stalled {gap:.2f} s while following"
    assert max(stats["block_s"]) < 0.5  # the writer was never held up
    # the result is a target like any other
    assert str(tmp_path / "scan_results.hdf") in [str(r.path) for r in window.results]


def test_live_tab_stop_keeps_a_partial_result(window, qtbot, tmp_path, qmap32):
    import h5py

    raw = tmp_path / "run.h5"
    window.show_live()
    panel = window.panels["live"]
    panel.qmap_edit.setText(str(qmap32))
    panel.fit_box.setChecked(False)
    panel.every.setValue(0.3)
    th, _ = _writer_thread(raw, 2400, 800, mode="swmr")
    th.start()
    qtbot.waitUntil(raw.exists, timeout=10000)
    panel.set_source(str(raw))
    panel.start()
    qtbot.waitUntil(lambda: panel.last_update is not None, timeout=30000)
    panel.stop()
    qtbot.waitUntil(lambda: not panel.running, timeout=30000)
    th.join()
    up = panel.final
    assert up.end == "stopped" and 2 <= up.frames < 2400
    with h5py.File(up.output, "r") as f:
        assert f["/xpcs/live/partial"][()]
    qtbot.waitUntil(lambda: len(window.results) == 1, timeout=30000)


def _run_files(tmp_path, qmap, n=3):
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs.live import LiveOptions, follow
    from xpcsviewer.synthetic.acquisition import frame_source, write_growing

    out = []
    for i in range(n):
        raw = tmp_path / f"raw{i}.h5"
        write_growing(raw, frame_source((32, 32), 800 + 200 * i, kind="speckle",
                                        frame_time=1e-3, seed=i),
                      rate=1e6, shape=(32, 32), mode="swmr", frame_time=1e-3)
        p = tmp_path / "run" / f"s{i}_results.hdf"
        p.parent.mkdir(exist_ok=True)
        follow(raw, read_qmap(qmap), p, LiveOptions(idle=1))
        out.append(p)
        time.sleep(1.1)  # distinct start times (1 s resolution)
    return out


def test_series_tab_fits_each_file_once_and_follows_the_folder(window, qtbot, tmp_path, qmap32,
                                                               wait_idle, monkeypatch):
    from xpcsviewer.gui.panels import _live_jobs

    files = _run_files(tmp_path, qmap32, 4)
    calls = []
    real = _live_jobs.fit_series_job

    def counting(paths, *a, **k):
        calls.append(list(paths))
        return real(paths, *a, **k)

    monkeypatch.setattr("xpcsviewer.gui.panels.series.fit_series_job", counting)
    window.open_paths([str(p) for p in files[:2]])
    wait_idle(window, 60000)
    window.select_tab("series")
    panel = window.panels["series"]
    wait_idle(window, 60000)
    assert [len(c) for c in calls] == [2]
    assert len(panel.table.files) == 2 and len(panel.chosen_bins()) == 4
    x = panel.table.x_values()
    assert x[0] == 0 and x[1] >= 1  # seconds since the first start
    # a new target: fitted alone, appended
    window.browser.add_paths([str(files[2])])
    wait_idle(window, 60000)
    assert [len(c) for c in calls] == [2, 1] and len(panel.table.files) == 3
    # follow the folder: a finished file that appears there is appended
    panel.follow_box.setChecked(True)
    qtbot.waitUntil(lambda: len(panel.table.files) == 4, timeout=30000)
    assert calls[-1] == [str(files[3])]
    panel.follow_box.setChecked(False)
    items = [it for it in panel.tau_plot.listDataItems() if it.xData is not None
             and it.xData.size]
    assert items  # tau against time is drawn
    # exports: figure and table
    fig, csv = tmp_path / "series.png", tmp_path / "series.csv"
    panel.export_figure(fig)
    panel.export_data(csv)
    wait_idle(window, 60000)
    assert fig.stat().st_size > 10_000
    rows = csv.read_text().splitlines()
    assert any("tau_s" in r for r in rows[:3]) and len(rows) >= 4 * 6
    # the x by index
    panel.x_combo.setCurrentIndex(panel.x_combo.findData("index"))
    wait_idle(window, 60000)
    assert list(panel.table.x_values()) == [0.0, 1.0, 2.0, 3.0]
    assert np.isfinite(panel.table.curve(panel.chosen_bins()[0], "tau_s")[1]).any()


def test_live_tau_and_contrast_show_only_measured_values(window):
    # An early partial g2 (9 frames) gave fits with contrast 0 +- 4000 that set the
    # contrast axis to +-4000: only fits that measured a contrast are drawn, filled
    # where converged and open where tau is only a limit.
    from types import SimpleNamespace

    panel = window.panels["live"]

    def b(q, status, c, ce):
        return {"q": q, "status": status, "tau_s": 0.1, "tau_err_s": 0.01,
                "contrast": c, "contrast_err": ce}

    up = SimpleNamespace(bins=[b(0.001, "converged", 0.2, 0.01),
                               b(0.002, "unresolved", 0.19, 0.02),
                               b(0.003, "failed", 0.0, 4000.0),
                               b(0.004, "no_decay", 1e-4, 3000.0),
                               b(0.005, "poor_fit", 0.5, 2.0)])
    panel._draw_bins(up)
    np.testing.assert_allclose(panel.c_item.xData, [0.001])
    np.testing.assert_allclose(panel.c_open.xData, [0.002])
    np.testing.assert_allclose(panel.c_open.yData, [0.19])
    # tau likewise: a failed or flat fit's tau is not drawn at all
    np.testing.assert_allclose(panel.tau_item.xData, [0.001])
    np.testing.assert_allclose(panel.tau_open.xData, [0.002])


def test_live_tab_follows_a_rigaku_bin_on_photons(window, qtbot, tmp_path):
    """A Rigaku .bin being appended: the tab takes the photon correlator, draws partial
    g2 and ends with a result whose config says so (issue 30)."""
    import h5py

    from xpcsviewer.cli import main

    qmap = tmp_path / "rigaku_qmap.hdf"
    assert main(["qmap", "--shape", "512", "1024", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "20", "--bcy", "20", "--dq-num", "4",
                 "--sq-num", "16", "-o", str(qmap), "--quiet"]) == 0
    rng = np.random.default_rng(2)
    n = 3000
    hit = rng.random((n, 40, 40)) < 0.02
    f, r, c = np.nonzero(hit)
    words = ((f.astype(np.uint64) << np.uint64(40))
             | ((r * 1024 + c).astype(np.uint64) << np.uint64(16)) | np.uint64(1))
    raw = tmp_path / "scan.bin"

    def write() -> None:
        with open(raw, "wb") as fh:
            for part in np.array_split(words.astype("<u8"), 15):
                fh.write(part.tobytes())
                fh.flush()
                time.sleep(0.1)

    th = threading.Thread(target=write)
    th.start()
    window.show_live()
    panel = window.panels["live"]
    panel.qmap_edit.setText(str(qmap))
    panel.fit_box.setChecked(False)
    panel.every.setValue(0.3)
    panel.idle.setValue(3.0)
    qtbot.waitUntil(raw.exists, timeout=10000)
    panel.set_source(str(raw))
    panel.start()
    qtbot.waitUntil(lambda: not panel.running, timeout=60000)
    th.join()
    up = panel.final
    assert up is not None and up.final and up.frames == n
    assert panel.sink is None or panel.sink.engine in ("sparse", "auto")
    # photons only in a 40 x 40 corner: the bins they reach are drawn; a bin without
    # any (g2 = 0/0 at every delay) is left out, not drawn at g2 = 0 (issue 49), and
    # the status says so
    v = up.view
    lit = {j for j in panel.g2_items if np.any(v.valid[:, j] & (v.g2[:, j] != 0))}
    assert lit
    for j, it in panel.g2_items.items():
        ys = it.yData if it.yData is not None else np.zeros(0)
        assert (ys.size > 0) == (j in lit) and not np.any(ys == 0)
    if len(lit) < len(panel.g2_items):
        assert "no photons yet" in panel.status.text()
    # a .bin has no frame time: delays are frames and the axes say so (issue 33)
    assert up.view.time_unit == "frames"
    assert panel.g2_plot.getAxis("left").style["showValues"]  # numbers once data came
    assert panel.g2_plot.getAxis("bottom").labelText == "\u03c4 (frames)"
    assert panel.trace_plot.getAxis("bottom").labelText == "t (frames)"
    assert panel.status.text().startswith("Finished (")
    # the window opens the result as a target (without the HDF5 lock): read it likewise
    with h5py.File(up.output, "r", locking=False) as fh:
        assert fh["/xpcs/multitau/config/path"][()] == b"sparse"
        # a .bin states no end: the idle end is partial and says so (issue 50)
        assert fh["/xpcs/live/partial"][()] and fh["/xpcs/live/problem"][()] == b"idle"
    assert "no end signal from the source; partial result" in panel.status.text()


def test_live_frame_time_field(window):
    """Issue 33 (5): a frame time typed in goes to the run; empty means the raw file's."""
    panel = window.panels["live"]
    assert panel.frame_time() is None
    panel.frame_time_edit.setText("2e-5")
    assert panel.frame_time() == 2e-5
    panel.frame_time_edit.setText("")
    assert panel.frame_time() is None


def test_live_empty_plots_show_no_numbers(window):
    """Issue 33 (8): before any data the plots showed 1-10 'q' and 'tau' ranges."""
    panel = window.panels["live"]
    for p in (panel.g2_plot, panel.tau_plot, panel.contrast_plot, panel.trace_plot):
        assert not p.getAxis("left").style["showValues"]
        assert not p.getAxis("bottom").style["showValues"]
