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


def test_snapshot_skips_the_g2_side_file(qapp, tiny_demo_dir, tmp_path, capsys):
    from xpcsviewer.cli import main

    side = tiny_demo_dir / "T03_tiny_g2_results_G2.hdf"
    files = sorted(tiny_demo_dir.iterdir())
    assert side in files
    out = tmp_path / "s.png"
    capsys.readouterr()
    assert main(["snapshot", *map(str, files), "--tab", "saxs1d", "-o", str(out),
                 "--size", "400", "300"]) == 0  # was exit 3
    err = capsys.readouterr().err
    assert f"note: skipping {side}: a per-pixel G2 side file of " in err
    assert out.stat().st_size > 0
    # nothing but side files: nothing to show, exit 3 naming it
    rc = main(["snapshot", str(side), "--tab", "saxs1d", "-o", str(tmp_path / "t.png")])
    assert rc == 3 and str(side) in capsys.readouterr().err
    assert not (tmp_path / "t.png").exists()
