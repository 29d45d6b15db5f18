"""Multi-page figures are written as one set (issue 49 item 5): all pages or none, and
no page of an earlier export left beside them."""

from __future__ import annotations

import os

import matplotlib.figure
import pytest

from xpcsviewer.export.files import figure_files, save_figure, save_figure_pages


def _pages(n: int, tag: str = "") -> list:
    out = []
    for k in range(n):
        f = matplotlib.figure.Figure(figsize=(2, 2))
        f.add_subplot().set_title(f"page {k + 1} {tag}")
        out.append(f)
    return out


def _names(paths) -> list[str]:
    return [p.name for p in paths]


def test_figure_files_lists_the_name_and_every_page_in_order(tmp_path):
    for name in ("g.png", "g_p1.png", "g_p2.png", "g_p10.png", "g_p3.svg", "gx_p1.png",
                 "g_p0.png", "g_pA.png", "other.png"):
        (tmp_path / name).write_bytes(b"x")
    assert _names(figure_files(tmp_path / "g.png")) == ["g.png", "g_p1.png", "g_p2.png",
                                                        "g_p10.png"]
    assert figure_files(tmp_path / "none.png") == []
    assert figure_files(tmp_path / "missing" / "g.png") == []


def test_fewer_pages_remove_the_stale_pages_of_the_earlier_export(tmp_path):
    target = tmp_path / "fig.png"
    assert _names(save_figure_pages(_pages(3), target)) == ["fig_p1.png", "fig_p2.png",
                                                            "fig_p3.png"]
    written = save_figure_pages(_pages(2), target)
    assert _names(written) == ["fig_p1.png", "fig_p2.png"]
    assert _names(figure_files(target)) == ["fig_p1.png", "fig_p2.png"]
    # one page: the pages of the paged export go, the single file stays
    assert save_figure(_pages(1), target) == target
    assert _names(figure_files(target)) == ["fig.png"]
    # and a paged export removes the single file
    save_figure_pages(_pages(2), target)
    assert _names(figure_files(target)) == ["fig_p1.png", "fig_p2.png"]


def test_a_failed_page_leaves_the_earlier_set_untouched(tmp_path):
    target = tmp_path / "fig.svg"
    save_figure_pages(_pages(3), target)
    before = {p.name: p.read_bytes() for p in figure_files(target)}
    new = _pages(3, "new")

    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    new[1].savefig = broken  # the middle page fails: neither p1 nor p3 may change
    with pytest.raises(RuntimeError, match="disk on fire"):
        save_figure_pages(new, target)
    assert {p.name: p.read_bytes() for p in figure_files(target)} == before
    assert sorted(os.listdir(tmp_path)) == sorted(before)  # no temporaries left


def test_pages_are_renamed_into_place_only_when_all_are_rendered(tmp_path, monkeypatch):
    """The first page is renamed last (its presence says the set is whole), and no page
    lands before every page was rendered."""
    target = tmp_path / "a.svg"
    events: list[str] = []
    real_replace = os.replace

    def replace(src, dst):
        events.append(f"rename {os.path.basename(dst)}")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    pages = _pages(3)
    for k, f in enumerate(pages):
        f.savefig = (lambda fh, _s=f.savefig, k=k, **kw: (events.append(f"draw {k + 1}"),
                                                            _s(fh, **kw)))
    save_figure_pages(pages, target)
    assert events == ["draw 1", "draw 2", "draw 3",
                      "rename a_p3.svg", "rename a_p2.svg", "rename a_p1.svg"]


def test_a_multi_page_pdf_is_one_file_and_replaces_png_like_pages_of_its_name(tmp_path):
    target = tmp_path / "f.pdf"
    (tmp_path / "f_p2.pdf").write_bytes(b"%PDF old")
    assert save_figure_pages(_pages(3), target) == [target]
    assert _names(figure_files(target)) == ["f.pdf"]
