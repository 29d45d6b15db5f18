"""``xpcsviewer snapshot``: renders a tab to a non-empty PNG."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_snapshot_writes_png_of_the_tab(qapp, demo_files, tmp_path):
    from PySide6.QtGui import QImage

    from xpcsviewer.cli import main

    out = tmp_path / "shots" / "saxs1d.png"
    rc = main(["snapshot", str(demo_files[0]), str(demo_files[1]), "--tab", "saxs1d",
               "-o", str(out), "--size", "900", "600"])
    assert rc == 0
    img = QImage(str(out))
    assert (img.width(), img.height()) == (900, 600)
    # not a blank grab: many distinct colours (plot lines, text, widgets)
    colours = {img.pixel(x, y) for x in range(0, 900, 7) for y in range(0, 600, 7)}
    assert len(colours) > 20
    assert [p.name for p in out.parent.iterdir()] == ["saxs1d.png"]  # no temp file left


def test_snapshot_missing_file_is_exit_3(qapp, tmp_path, capsys):
    from xpcsviewer.cli import main

    rc = main(["snapshot", str(tmp_path / "nope.hdf"), "--tab", "saxs2d",
               "-o", str(tmp_path / "x.png")])
    assert rc == 3
    assert "nope.hdf" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
