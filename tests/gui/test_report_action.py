"""File > Report of the Targets: the report of the selected files, written in a worker
(the window stays responsive), and a message when nothing is selected."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_report_of_the_targets(window, tiny_demo_dir, tmp_path, wait_idle):
    from xpcsviewer.gui._report_action import report_targets

    files = sorted(str(p) for p in tiny_demo_dir.glob("T0[12]*_results.hdf"))
    window.open_paths(files)
    wait_idle(window, 60000)
    assert len(window.browser.target_paths()) == 2
    texts = [a.text() for a in window.menuBar().actions()[0].menu().actions()]
    assert "&Report of the Targets\u2026" in texts
    out = tmp_path / "report.html"
    rid = report_targets(window, str(out))
    assert rid is not None and rid >= 0
    wait_idle(window, 180000)
    text = out.read_text(encoding="utf-8")
    assert all(f in text for f in files)
    assert "Wrote report.html" in window.message_label.text()
    assert window.errors == []


def test_report_without_targets_says_so(window, tmp_path, wait_idle):
    from xpcsviewer.gui._report_action import report_targets

    assert report_targets(window, str(tmp_path / "r.html")) is None
    wait_idle(window)
    assert "select the files" in window.message_label.text()
    assert not (tmp_path / "r.html").exists()


def test_report_is_drawn_in_a_worker_process(window, tiny_demo_dir, tmp_path, wait_idle,
                                             monkeypatch):
    """Its drawing holds the GIL for seconds: it runs in a spawned process (issue 49,
    item 7), the same report written."""
    import xpcsviewer.jobs.process_job as pj
    from xpcsviewer.gui._report_action import report_job, report_targets

    calls = []
    real = pj.run_in_process

    def spy(fn, *args, **kw):
        calls.append(fn)
        return real(fn, *args, **kw)

    monkeypatch.setattr(pj, "run_in_process", spy)
    monkeypatch.setenv("XPCS_DRAW_IN_PROCESS", "1")
    files = sorted(str(p) for p in tiny_demo_dir.glob("T01*_results.hdf"))
    window.open_paths(files)
    wait_idle(window, 60000)
    out = tmp_path / "report.html"
    assert report_targets(window, str(out)) is not None
    wait_idle(window, 240000)
    assert calls == [report_job]
    assert files[0] in out.read_text(encoding="utf-8")
    assert "Wrote report.html" in window.message_label.text()
    assert window.errors == []
