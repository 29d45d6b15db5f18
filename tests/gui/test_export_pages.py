"""Exports in the real window (issue 49 item 5): a multi-page figure asks once before
replacing any page and leaves no page of the earlier export; the status names every page;
save dialogs propose the last export folder (or the per-user one), never the data folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.gui


def _pages(folder: Path, stem: str) -> list[str]:
    found = [p.name for p in folder.iterdir() if re.fullmatch(rf"{stem}(_p\d+)?\.png", p.name)]
    return sorted(found, key=lambda n: int(re.search(r"_p(\d+)", n)[1]) if "_p" in n else 0)


@pytest.fixture
def g2_window(window, demo_files, open_demo, wait_idle):
    open_demo(window, demo_files, names={"A01"})
    window.select_tab("g2")
    wait_idle(window, 120000)
    return window


def _export_as(window, monkeypatch, qtbot, path: Path, size: str, seen: dict | None = None,
               answer=None, wait: bool = True):
    """File > Export Figure as a user: the dialog (its exec faked) picks ``path`` at
    ``size``; ``answer`` answers the replace question (recorded in ``seen``)."""
    from PySide6.QtWidgets import QMessageBox

    from xpcsviewer.gui.export_dialog import FigureExportDialog

    seen = seen if seen is not None else {}

    def fake_exec(dlg):
        seen["proposed"] = dlg.directory().absolutePath()
        dlg.size_combo.setCurrentIndex(dlg.size_combo.findData(size))
        dlg.selectFile(str(path))
        return 1

    def question(parent, title, text, *a, **k):
        seen.setdefault("questions", []).append(text)
        return answer

    monkeypatch.setattr(FigureExportDialog, "exec", fake_exec)
    monkeypatch.setattr(QMessageBox, "question", question)
    panel = window.current_panel()
    if wait:
        with qtbot.waitSignal(panel.sigExported, timeout=120000):
            window._on_export_figure()
    else:
        window._on_export_figure()
    return seen


def test_exporting_fewer_pages_asks_once_and_leaves_no_stale_page(
        g2_window, tmp_path, monkeypatch, qtbot, wait_idle):
    from PySide6.QtWidgets import QMessageBox

    win = g2_window
    out = tmp_path / "figs"
    out.mkdir()  # a user picks a folder that exists
    target = out / "g2.png"
    seen = _export_as(win, monkeypatch, qtbot, target, "single")
    first = _pages(out, "g2")
    assert len(first) >= 3 and first[0] == "g2_p1.png", first
    assert "questions" not in seen  # nothing to replace: no question
    status = win.message_label.text()
    # every page by name, their number and their folder
    assert all(n in status for n in first), status
    assert f"({len(first)} pages)" in status and str(out) in status
    win.grab().save(str(Path("/tmp/i49/shots/D") / "status_after_multipage_export.png"))

    # the user says No: nothing is written or removed
    before = {n: (out / n).stat().st_mtime_ns for n in first}
    seen = _export_as(win, monkeypatch, qtbot, target, "double",
                      answer=QMessageBox.StandardButton.No, wait=False)
    wait_idle(win, 60000)
    assert len(seen["questions"]) == 1
    assert {n: (out / n).stat().st_mtime_ns for n in _pages(out, "g2")} == before

    # the user says Yes: one question listing every page there, fewer pages written,
    # the earlier export's last page removed
    seen = _export_as(win, monkeypatch, qtbot, target, "double",
                      answer=QMessageBox.StandardButton.Yes)
    wait_idle(win, 60000)
    assert len(seen["questions"]) == 1 and all(n in seen["questions"][0] for n in first)
    second = _pages(out, "g2")
    assert 2 <= len(second) < len(first), (first, second)
    assert second == [f"g2_p{k}.png" for k in range(1, len(second) + 1)]
    status = win.message_label.text()
    assert all(n in status for n in second) and f"({len(second)} pages; removed" in status
    assert "removed" in status and first[-1] in status, status
    win.grab().save(str(Path("/tmp/i49/shots/D") / "status_after_fewer_pages.png"))
    assert win.errors == []


def test_dialogs_propose_the_last_export_folder_never_the_data_folder(
        g2_window, demo_files, tmp_path, monkeypatch, qtbot, wait_idle, _export_dir):
    from PySide6.QtWidgets import QFileDialog

    win = g2_window
    data = demo_files[0].parent
    assert win.browser.folder and Path(win.browser.folder).resolve() == data.resolve()
    # first use: the per-user folder (made), not the data folder
    mine = tmp_path / "my figures"
    mine.mkdir()
    seen = _export_as(win, monkeypatch, qtbot, mine / "a.png", "double")
    assert Path(seen["proposed"]).resolve() == _export_dir.resolve() != data.resolve()
    # then the folder the user chose
    seen = _export_as(win, monkeypatch, qtbot, mine / "b.png", "double")
    assert Path(seen["proposed"]).resolve() == mine.resolve()
    wait_idle(win, 60000)

    starts = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda parent, title, start, *a, **k: (starts.append(start), ("", ""))[1])
    win._on_export_data()
    win._on_report()
    win.select_tab("saxs1d")
    wait_idle(win, 60000)
    win.panels["saxs1d"]._on_export_clicked()
    assert [Path(s).parent.resolve() for s in starts] == [mine.resolve()] * 3
    assert [Path(s).name for s in starts] == ["g2.csv", "report.html", "saxs1d_profiles.csv"]
    # kept in the session: the next window proposes it too
    assert win.session_dict()["last_export_folder"] == str(mine.resolve())


def test_average_proposes_its_output_in_the_export_folder(
        window, demo_files, open_demo, wait_idle, _export_dir):
    open_demo(window, demo_files, names={"F01", "F02"})
    window.select_tab("average")
    wait_idle(window, 120000)
    out = Path(window.panels["average"].output.text())
    assert out.parent.resolve() == _export_dir.resolve()
    assert out.name.startswith("Average_") and out.suffix == ".hdf"
