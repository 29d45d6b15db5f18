"""The g2 tab's model list and status colours come from xpcsviewer.fitting.vocabulary."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QColor

from xpcsviewer.fitting import vocabulary as v
from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.g2 import G2Panel
from xpcsviewer.gui.workers import TaskRunner


def test_g2_model_list_is_the_vocabulary(qtbot):
    p = G2Panel(AppContext(runner=TaskRunner()))
    qtbot.addWidget(p)
    c = p.model_combo
    assert [c.itemData(i) for i in range(c.count())] == list(v.MODEL_CHOICES)
    assert [c.itemText(i) for i in range(c.count())] == [v.MODEL_MENU[k]
                                                          for k in v.MODEL_CHOICES]


def test_result_row_colours_are_the_vocabulary():
    from xpcsviewer.gui.panels._g2_results import STATUS_COLORS

    assert set(STATUS_COLORS) == set(v.STATUS_ORDER)
    assert STATUS_COLORS["converged"] == QColor(205, 240, 205)  # unchanged by the move
    assert all(STATUS_COLORS[k].name() == h for k, h in v.STATUS_COLORS.items())
