"""``xpcsviewer export`` of a multi-page figure (issue 49 item 5): an earlier export's
pages are refused as a whole without --overwrite, and replaced as a whole with it (its
stale pages removed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpcsviewer.cli import main
from xpcsviewer.io.results.writer import write_result
from xpcsviewer.synthetic.results import build_result

from .conftest import _spec


@pytest.fixture(scope="module")
def many_bins(tmp_path_factory) -> Path:
    res, extra = build_result({**_spec(7), "partition": {"dq_num": 8, "sq_num": 16}}, seed=7)
    res.path = tmp_path_factory.mktemp("pages") / "m_results.hdf"
    write_result(res.path, res, saxs_2d=extra["saxs_2d"])
    return res.path


def _export(path: Path, out: Path, *extra: str) -> int:
    return main(["export", str(path), "--plot", "g2", "--format", "svg", "--size", "single",
                 "-o", str(out), "--quiet", *extra])


def test_export_refuses_any_page_of_an_earlier_set_and_replaces_it_whole(
        many_bins, tmp_path, capsys):
    out = tmp_path / "figs"
    assert _export(many_bins, out) == 0
    pages = sorted(out.glob("combined_g2_p*.svg"), key=lambda p: int(p.stem.rsplit("_p")[1]))
    assert len(pages) >= 2
    n = len(pages)
    # a page of a longer earlier export, and the single-file name of a 1-page one
    stale = [out / f"combined_g2_p{n + 1}.svg", out / "combined_g2.svg"]
    for p in stale:
        p.write_text("<svg>old</svg>")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()

    assert _export(many_bins, out) == 2
    err = capsys.readouterr().err
    assert "an earlier export of this figure exists" in err and "--overwrite" in err
    assert f"combined_g2_p{n + 1}.svg" in err and "combined_g2.svg" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing touched

    assert _export(many_bins, out, "--overwrite") == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in pages)


def test_export_refuses_pages_even_when_only_a_later_page_exists(many_bins, tmp_path, capsys):
    """The old check looked only at the new set's own page names."""
    out = tmp_path / "figs"
    out.mkdir()
    (out / "combined_g2_p9.svg").write_text("<svg>old</svg>")
    assert _export(many_bins, out) == 2
    assert "combined_g2_p9.svg" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["combined_g2_p9.svg"]
