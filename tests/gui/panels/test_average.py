"""Average tab: worker run with progress, output, statistic plot, rejected list."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

pytest.importorskip("pytestqt")

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.average import AveragePanel
from xpcsviewer.gui.workers import TaskRunner
from xpcsviewer.io import read_result


@pytest.fixture(scope="module")
def demo_dir(demo_set_dir):
    return demo_set_dir


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = AveragePanel(ctx)
    qtbot.addWidget(p)
    p.resize(1200, 800)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def _repeats(demo_dir, tmp_path, n=4):
    src = demo_dir / "A02_silica_R250nm_water_results.hdf"
    out = []
    for i in range(n):
        dst = tmp_path / f"rep{i}_results.hdf"
        shutil.copy(src, dst)
        out.append(dst)
    # the same run with its g2 changed (a different sample, same q-map and delays):
    # an outlier for the robust statistics
    other = tmp_path / "outlier_results.hdf"
    shutil.copy(src, other)
    with h5py.File(other, "r+") as f:
        g2 = f["/xpcs/multitau/normalized_g2"]
        g2[...] = 1.0 + 0.5 * (g2[...] - 1.0)
    return out, other


def test_average_tab_runs_through_worker(qtbot, panel, demo_dir, tmp_path):
    reps, other = _repeats(demo_dir, tmp_path)
    results = [read_result(p) for p in [*reps, other]]
    panel.set_results(results)
    assert panel.file_list.count() == 5
    assert panel.output.text().endswith("Average_rep0-outlier_5files.hdf")
    out = tmp_path / "avg.hdf"
    panel.output.setText(str(out))
    panel.method.setCurrentIndex(panel.method.findData("sem"))
    panel.use_mad.setChecked(True)
    panel.mad.setValue(5.0)
    progress = []
    panel.context.runner.sigProgress.connect(lambda *a: progress.append(a))
    with qtbot.waitSignal(panel.sigFinished, timeout=30000) as blocker:
        panel.start()
    outcome = blocker.args[0]
    assert outcome.error == "" and outcome.summary.output == out
    assert progress and not panel.cancel_btn.isEnabled() and panel.run_btn.isEnabled()
    rej = outcome.summary.rejected
    assert [p for p, _ in rej] == [str(other)] and "MADs" in rej[0][1]
    assert panel.table.rowCount() == 1 and panel.table.item(0, 0).text() == other.name
    # identical repeats: the SEM average is the data itself
    np.testing.assert_allclose(
        read_result(out).multitau.g2, results[0].multitau.g2, rtol=1e-6
    )
    # the statistic plot: 4 accepted points, 1 rejected, threshold line at the MAD limit
    panel.stat_combo.setCurrentIndex(panel.stat_combo.findData("g2_z"))
    assert len(panel.accepted_item.data) == 4 and len(panel.rejected_item.data) == 1
    assert panel.lines[0].isVisible() and panel.lines[0].value() == 5.0
    panel.stat_combo.setCurrentIndex(panel.stat_combo.findData("baseline"))
    ys = sorted(p.pos().y() for p in panel.accepted_item.points())
    assert ys == pytest.approx([outcome.summary.stats[0].baseline] * 4)


def test_average_tab_check_and_errors(qtbot, panel, demo_dir, tmp_path):
    reps, _ = _repeats(demo_dir, tmp_path, n=3)
    sheared = tmp_path / "qphi_results.hdf"
    shutil.copy(demo_dir / "B01_sheared_R100nm_qphi_results.hdf", sheared)
    panel.set_results([read_result(p) for p in reps])
    panel.use_baseline.setChecked(True)
    panel.b_min.setValue(1.5)
    panel.b_max.setValue(2.0)
    with qtbot.waitSignal(panel.sigFinished, timeout=30000) as blocker:
        panel.start(screen_only=True)
    s = blocker.args[0].summary
    assert blocker.args[0].screen_only and len(s.rejected) == 3
    assert all(panel.lines[i].isVisible() for i in range(2))
    assert len(panel.rejected_item.data) == 3
    # different q-maps: refused, nothing written, message names the file
    panel.use_baseline.setChecked(False)
    panel.set_results([read_result(p) for p in [*reps, sheared]])
    panel.output.setText(str(tmp_path / "never.hdf"))
    with qtbot.waitSignal(panel.sigFinished, timeout=30000) as blocker:
        panel.start()
    assert (
        "cannot average" in blocker.args[0].error
        and str(sheared) in blocker.args[0].error
    )
    assert not (tmp_path / "never.hdf").exists()
    assert "cannot average" in panel.summary_label.text()


def test_average_tab_needs_two_files(panel, demo_dir):
    one = [read_result(demo_dir / "A02_silica_R250nm_water_results.hdf")]
    assert "two or more" in panel.applies_to(one)


def test_average_tab_cancel_writes_nothing(qtbot, panel, demo_dir, tmp_path):
    reps, _ = _repeats(demo_dir, tmp_path, n=3)
    panel.set_results([read_result(p) for p in reps])
    panel.context.runner.wait_for_done(10000)  # the automatic check
    out = tmp_path / "cancelled.hdf"
    panel.output.setText(str(out))
    finished = []
    panel.sigFinished.connect(finished.append)
    panel.start()
    assert panel.cancel_btn.isEnabled() and not panel.run_btn.isEnabled()
    panel.cancel_btn.click()
    assert panel.context.runner.wait_for_done(20000)
    assert finished == [] and not out.exists()
    assert panel.run_btn.isEnabled() and panel.summary_label.text() == "cancelled"
    assert not list(tmp_path.glob(".cancelled.hdf*"))


def test_average_tab_settings_round_trip(qtbot):
    ctx = AppContext(runner=TaskRunner(synchronous=True))
    a, b = AveragePanel(ctx), AveragePanel(ctx)
    qtbot.addWidget(a)
    qtbot.addWidget(b)
    a.method.setCurrentIndex(a.method.findData("sem"))
    a.q_index.setValue(3)
    a.window.setValue(7)
    a.use_baseline.setChecked(True)
    a.b_min.setValue(0.9)
    a.use_mad.setChecked(True)
    a.mad.setValue(3.5)
    b.set_settings(a.get_settings())
    assert b.options() == a.options()
    assert b.options().baseline_range == (0.9, 1.05)
    b.set_settings({"q_index": "junk"})  # bad values are ignored, not raised
    assert b.options() == a.options()


def test_average_tab_export_figure(qtbot, panel, demo_dir, tmp_path):
    from xpcsviewer.export.figures import AVERAGE_STATISTICS
    from xpcsviewer.gui.panels.average import STATISTICS

    assert set(STATISTICS) == set(AVERAGE_STATISTICS)  # every choice can be drawn
    reps, other = _repeats(demo_dir, tmp_path, n=3)
    panel.use_mad.setChecked(True)
    panel.mad.setValue(5.0)
    with qtbot.waitSignal(panel.sigFinished, timeout=30000) as blocker:
        panel.set_results([read_result(p) for p in [*reps, other]])  # checks at once
    panel.stat_combo.setCurrentIndex(panel.stat_combo.findData("g2_z"))
    opts = panel.figure_options()
    assert panel.figure_kind == "average" and opts["statistic"] == "g2_z"
    assert opts["summary"] is blocker.args[0].summary
    assert opts["options"].mad_threshold == 5.0
    out = tmp_path / "figs" / "x.png"
    out.parent.mkdir()
    with qtbot.waitSignal(panel.sigExported, timeout=60000) as blocker:
        assert panel.export_figure(out) is not None
    assert blocker.args == [str(out)]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in out.parent.iterdir()] == ["x.png"]


def test_output_name_follows_targets_and_screening_is_on(qtbot, panel, demo_dir, tmp_path):
    files = sorted(demo_dir.glob("F0*_results.hdf"))
    assert len(files) == 4
    assert panel.use_mad.isChecked() and panel.use_baseline.isChecked()
    panel.set_results([read_result(p) for p in files[:2]])
    qtbot.waitUntil(lambda: panel.run_btn.isEnabled(), timeout=60000)
    assert panel.output.text().endswith("Average_repeat_R250nm_F01-F02.hdf")
    panel.set_results([read_result(p) for p in files])
    qtbot.waitUntil(lambda: panel.run_btn.isEnabled(), timeout=60000)
    # the check rejects the beam-damaged F04: the name says the 3 that will be averaged
    assert [p for p, _ in panel.outcome.summary.rejected] == [str(files[3])]
    assert panel.output.text().endswith("Average_repeat_R250nm_F01-F03_3files.hdf")
    own = str(tmp_path / "mine.hdf")
    panel.output.setText(own)  # typed by the user: kept
    panel.set_results([read_result(p) for p in files[1:]])
    qtbot.waitUntil(lambda: panel.run_btn.isEnabled(), timeout=60000)
    assert panel.output.text() == own
    assert panel.progress.format() == "checked"


def test_output_name_states_the_files_averaged(qtbot, panel, demo_dir, tmp_path, _export_dir):
    """The written file is named by the files actually averaged (after rejection), also
    when the options changed after the check (issue 22: '_4files' for 3 averaged); it is
    proposed in the export folder, not beside the data (issue 49)."""
    for p in sorted(demo_dir.glob("F0*_results.hdf")):
        shutil.copy(p, tmp_path / p.name)
    files = sorted(tmp_path.glob("F0*_results.hdf"))
    panel.set_results([read_result(p) for p in files])
    qtbot.waitUntil(lambda: panel.run_btn.isEnabled(), timeout=60000)
    three = _export_dir / "Average_repeat_R250nm_F01-F03_3files.hdf"
    assert panel.output.text() == str(three)
    with qtbot.waitSignal(panel.sigFinished, timeout=60000) as blocker:
        panel.start()
    s = blocker.args[0].summary
    assert s.output == three and len(s.accepted) == 3
    with h5py.File(three, "r") as f:
        assert int(f["entry/average/n_files"][()]) == 3
    # screening off after the check: all 4 are averaged, and the name says so
    panel.use_mad.setChecked(False)
    panel.use_baseline.setChecked(False)
    with qtbot.waitSignal(panel.sigFinished, timeout=60000) as blocker:
        panel.start()
    four = _export_dir / "Average_repeat_R250nm_F01-F04_4files.hdf"
    assert blocker.args[0].summary.output == four and panel.output.text() == str(four)
    with h5py.File(four, "r") as f:
        assert int(f["entry/average/n_files"][()]) == 4
