"""Issue 49 item 3 (and item 9's segment legend): the Two-Time tab of the real main
window on the ageing demo file C01 says its ageing result: it opens on a q-bin with a
determined law, the tau plot's title gives the law's result, a line above the plots
gives every bin's verdict, a status that could compare no window says so, no text of
the tab is cut at the app's default size, and the segments' key covers no curve."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QLabel

C01 = "C01_ageing_gel_twotime"


@pytest.fixture(scope="module")
def c01(tmp_path_factory):
    """The demo's C01 (seed 0, as `xpcsviewer demo` writes it): bins 2-4 ageing, bin 1's
    tau beyond the windows' reach."""
    from xpcsviewer.synthetic.demo import write_demo

    out = tmp_path_factory.mktemp("c01")
    write_demo(out, seed=0, names=[C01])
    return next(out.glob("C01_*_results.hdf"))


@pytest.fixture
def shown(qtbot, c01):
    """The main window at its default size with C01 open on the Two-Time tab, once
    every bin is analysed (the survey's jobs are done)."""
    from xpcsviewer.gui.main_window import MainWindow

    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1400, 900)  # the app's default size
    win.show()
    win.open_paths([str(c01)])
    assert win.context.runner.wait_until_idle(120000)
    win.select_tab("twotime")
    panel = win.panels["twotime"]
    qtbot.waitUntil(lambda: len(panel.ages.survey.outcomes) == panel.bin_combo.count()
                    and not win.context.runner.running_keys(), timeout=600000)
    assert panel.ages.outcome is not None
    yield win, panel
    win.shutdown(10000)


def _label_fits(lab: QLabel) -> bool:
    """The label shows its whole text: a wrapping one is tall enough for its lines, any
    other wide enough for its text."""
    if lab.wordWrap():
        return lab.heightForWidth(lab.width()) <= lab.height()
    return lab.sizeHint().width() <= lab.width()


def test_opens_on_a_bin_with_a_law_and_says_every_verdict(shown):
    from xpcsviewer.views import ages as av

    _win, panel = shown
    ages = panel.ages
    law = str(ages.law_combo.currentData())
    outs = {o.request.dq: o for o in ages.survey.outcomes.values()}
    verdicts = {dq: o.fits.laws[law][0].verdict for dq, o in outs.items()}
    # the demo's truth: bin 1 undetermined, bins 2-4 ageing
    assert verdicts == {1: "undetermined", 2: "ageing", 3: "ageing", 4: "ageing"}
    # opened on the first bin with a determined law, not on bin 1
    assert panel.bin_combo.currentData() == 2 == ages.outcome.request.dq
    # the title gives the law's result, from the law's own text
    line = av.law_line(ages.outcome.fits, 0, law)
    title = ages.tau_plot.titleLabel.text
    assert line.short in title and "ageing" in title and not title.endswith(": -")
    # the verdict line lists every bin with the law's own text of each
    text = ages.verdicts.text()
    for dq, o in outs.items():
        assert f"<b>bin {dq}</b>: " in text
        assert av.law_verdict(o.fits, 0, law).replace("'", "&#x27;") in text
    assert text.count("<b>bin ") == panel.bin_combo.count() == 4
    assert "undetermined (" in text and "analysing" not in text


def test_a_bin_whose_windows_could_not_compare_says_so(qtbot, shown):
    win, panel = shown
    ages = panel.ages
    # the user picks bin 1 in the q-bin list: drawn at once from the survey
    k = panel.bin_combo.findData(1)
    panel.bin_combo.setCurrentIndex(k)
    panel.bin_combo.activated.emit(k)
    qtbot.waitUntil(lambda: ages.outcome is not None and ages.outcome.request.dq == 1,
                    timeout=60000)
    testable = ages.outcome.fits.flag_testable[:, 0]
    assert not testable.any()  # bin 1: no window where both cuts converged
    status = ages.status.text()
    assert "no window could compare the two cuts" in status
    assert "in none of the 5 windows did both cuts converge" in status
    assert "0 of 5" not in status
    assert ages.tau_plot.titleLabel.text == "\u03c4 against age: no law (undetermined)"
    # the user's choice stays: the tab does not move back to a bin with a law
    assert win.context.runner.wait_until_idle(60000)
    assert panel.bin_combo.currentData() == 1


def test_no_text_of_the_tab_is_cut_at_the_default_size(qtbot, shown):
    _win, panel = shown
    for dq in (2, 1):  # a long status (agreement) and the no-comparison one
        panel.set_bin_index(panel.bin_combo.findData(dq))
        qtbot.waitUntil(lambda d=dq: panel.ages.outcome is not None
                        and panel.ages.outcome.request.dq == d, timeout=60000)
        qtbot.wait(50)  # the layout follows the new texts
        shown_labels = [lab for lab in panel.findChildren(QLabel)
                        if lab.isVisible() and lab.text().strip()]
        assert len(shown_labels) >= 8
        cut = [lab.text()[:60] for lab in shown_labels if not _label_fits(lab)]
        assert cut == []
        # the whole tab is on screen: the scroll area needs no scrolling down
        scroll = panel.parentWidget().parentWidget()
        assert panel.height() <= scroll.height()
        # the plot titles are not cut either
        for plot in (*panel.ages.cut_plots.values(), panel.ages.tau_plot):
            label = plot.titleLabel
            assert label.item.boundingRect().width() <= label.width() + 1, label.text


def test_the_segment_key_is_below_the_g2_plot_not_over_its_curves(shown):
    from pyqtgraph import LegendItem

    _win, panel = shown
    n_seg = sum(1 for it in panel.g2_plot.listDataItems()) - 1
    assert n_seg >= 2
    # no legend inside the plot
    assert not [it for it in panel.g2_plot.vb.scene().items() if isinstance(it, LegendItem)
                and it.parentItem() is not None]
    key = panel.g2_key
    assert key.isVisible() and "full run" in key.text()
    assert key.text().count("\u2501") == n_seg + 1
    assert _label_fits(key)
    # the key lies below the plot's area
    assert key.geometry().top() >= panel.g2_pw.geometry().bottom()
