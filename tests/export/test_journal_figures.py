"""Issue 33: exported figures a journal accepts, for every kind the export command
draws, at every page preset: TrueType (not Type 3) fonts in PDF, text kept as text in
SVG, the preset's page width, no text running into other text or off the page, and
legends that cover no data point. The g2 figure is split into pages of the preset and
has a key of its fit line styles."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import combinations

import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.commands.export import PLOTS

PRESETS = ("single", "double", "slide")
WIDTH = {"single": 3.4, "double": 7.0, "slide": 10.0}
FILES = ("A01_silica_R100nm_water", "D01_silica_R250nm_both", "E01_beam_damage_R250nm")

pytestmark = pytest.mark.slow


# --------------------------------------------------------------------- checks
def pdf_font_problems(data: bytes) -> list[str]:
    out = []
    if re.search(rb"/Subtype\s*/Type3", data):
        out.append("Type 3 font in the PDF")
    if not re.search(rb"/FontFile2|/Subtype\s*/TrueType|/CIDFontType2", data):
        out.append("no TrueType font embedded")
    return out


def pdf_page_sizes(data: bytes) -> list[tuple[float, float]]:
    return [(float(w) / 72, float(h) / 72) for w, h in
            re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", data)]


def svg_text_problems(data: bytes) -> list[str]:
    root = ET.fromstring(data)
    ns = "{http://www.w3.org/2000/svg}"
    out = []
    if not list(root.iter(f"{ns}text")):
        out.append("no <text> element")
    glyphs = [e for e in root.iter(f"{ns}path") if "DejaVu" in (e.get("id") or "")]
    if glyphs:
        out.append(f"text drawn as {len(glyphs)} glyph paths")
    return out


def svg_size(data: bytes) -> tuple[float, float]:
    root = ET.fromstring(data)
    w, h = (float(root.get(k).removesuffix("pt")) / 72 for k in ("width", "height"))
    return w, h


def drawn_texts(fig) -> list:
    """Every Text artist drawn: titles, axis and tick labels, legends, colour bars."""
    texts = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                if axis.get_visible():
                    texts += [axis.label, axis.offsetText]
                    for tick in axis._update_ticks():  # the ticks inside the view
                        texts += [tick.label1, tick.label2]
        leg = ax.get_legend()
        if leg is not None:
            texts += [*leg.get_texts(), leg.get_title()]
    for leg in fig.legends:
        texts += [*leg.get_texts(), leg.get_title()]
    texts += [t for t in (fig._suptitle, fig._supxlabel, fig._supylabel) if t is not None]
    texts += list(fig.texts)
    return [t for t in dict.fromkeys(texts) if t.get_visible() and t.get_text().strip()]


def text_problems(fig, tol: float = 1.0) -> list[str]:
    """Text boxes that overlap or leave the page (``tol`` pixels of touching allowed)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(r)) for t in drawn_texts(fig)]
    w, h = fig.bbox.width, fig.bbox.height
    out = [f"off the page: {s!r}" for s, b in boxes
           if b.x0 < -tol or b.y0 < -tol or b.x1 > w + tol or b.y1 > h + tol]
    for (s1, b1), (s2, b2) in combinations(boxes, 2):
        if (min(b1.x1, b2.x1) - max(b1.x0, b2.x0) > tol
                and min(b1.y1, b2.y1) - max(b1.y0, b2.y0) > tol):
            out.append(f"overlap: {s1!r} / {s2!r}")
    return out


def covered_points(fig) -> list[str]:
    """Data points (line markers inside their axes) under a legend box."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legs = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    out = []
    for ax in fig.axes:
        for line in ax.lines:
            if line.get_marker() in (None, "None", "", " ") or not line.get_visible():
                continue
            xy = np.column_stack(line.get_data()).astype(float)
            xy = xy[np.isfinite(xy).all(axis=1)]
            if not xy.size:
                continue
            p = ax.transData.transform(xy)
            a = ax.bbox
            inside = (p[:, 0] >= a.x0) & (p[:, 0] <= a.x1) & (p[:, 1] >= a.y0) & (p[:, 1] <= a.y1)
            for leg in legs:
                b = leg.get_window_extent(r)
                hit = inside & (p[:, 0] >= b.x0) & (p[:, 0] <= b.x1) & (
                    p[:, 1] >= b.y0) & (p[:, 1] <= b.y1)
                if hit.any():
                    out.append(f"{int(hit.sum())} point(s) of {line.get_label()!r}")
    return out


# ------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def demo_files(demo_set_dir):
    return [demo_set_dir / f"{name}_results.hdf" for name in FILES]


@pytest.fixture(scope="module")
def pages(demo_files):
    """(preset, kind) -> the pages the export command draws, built once."""
    from xpcsviewer.commands.export import COMBINED_KINDS, _figure_inputs, _needs
    from xpcsviewer.export import make_figures
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io import read_result

    results = [read_result(p) for p in demo_files]
    fits = fit_curves(g2_blocks(results), FitSpec("single"))
    cache = {}

    def get(preset, kind):
        if (preset, kind) not in cache:
            use = [r for r in results if _needs(kind, r) is None]
            if kind not in COMBINED_KINDS:
                use = use[:1]
            # g2 and diffusion: all three files (each has multitau g2), one fit
            cache[preset, kind] = make_figures(kind, use, preset,
                                               **_figure_inputs(kind, use, fits))
        return cache[preset, kind]

    return get


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", PLOTS)
@pytest.mark.parametrize("preset", PRESETS)
def test_files_have_embeddable_fonts_and_the_preset_width(pages, preset, kind, tmp_path):
    from xpcsviewer.export import save_figure
    from xpcsviewer.export.files import page_paths

    figs = pages(preset, kind)
    save_figure(figs, tmp_path / "f.pdf")
    pdf = (tmp_path / "f.pdf").read_bytes()
    assert pdf_font_problems(pdf) == []
    sizes = pdf_page_sizes(pdf)
    assert len(sizes) == len(figs)
    for w, h in sizes:
        assert w == pytest.approx(WIDTH[preset], abs=0.05)
        assert h <= {"single": 6.0, "double": 9.0, "slide": 5.6}[preset] + 0.05
    save_figure(figs, tmp_path / "f.svg")
    for path in page_paths(tmp_path / "f.svg", len(figs)):
        svg = path.read_bytes()
        assert svg_text_problems(svg) == []
        assert svg_size(svg)[0] == pytest.approx(WIDTH[preset], abs=0.05)


@pytest.mark.parametrize("kind", PLOTS)
@pytest.mark.parametrize("preset", PRESETS)
def test_no_text_overlaps_or_leaves_the_page(pages, preset, kind):
    for k, fig in enumerate(pages(preset, kind)):
        assert text_problems(fig) == [], f"page {k + 1}"


@pytest.mark.parametrize("kind", ["diffusion", "g2"])
@pytest.mark.parametrize("preset", PRESETS)
def test_legends_cover_no_data_point(pages, preset, kind):
    for fig in pages(preset, kind):
        assert covered_points(fig) == []


@pytest.mark.parametrize("preset", PRESETS)
def test_g2_pages_hold_at_most_a_page_of_panels(pages, preset):
    from xpcsviewer.export import SIZE_PRESETS

    figs = pages(preset, "g2")
    per_page = SIZE_PRESETS[preset].g2_per_page
    shown = [sum(ax.axison for ax in fig.axes) for fig in figs]
    assert sum(shown) > per_page and len(figs) == -(-sum(shown) // per_page)
    assert all(n <= per_page for n in shown)
    for k, fig in enumerate(figs):
        assert f"page {k + 1}/{len(figs)}" in " ".join(fig._suptitle.get_text().split())


def test_g2_has_a_key_of_its_fit_line_styles(demo_files):
    """Poor and unresolved fits are drawn dashed or dotted: the legend says which."""
    import copy

    from xpcsviewer.export import make_figure
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io import read_result

    res = [read_result(demo_files[0])]
    fits = copy.copy(fit_curves(g2_blocks(res), FitSpec("single")))
    fits.status = np.array(["converged", "poor_fit", "unresolved", "no_decay"]
                           * (len(fits.status) // 4 + 1), dtype=object)[: len(fits.status)]
    fig = make_figure("g2", res, size="double", fits=fits)
    (leg,) = fig.legends
    keys = {t.get_text(): h.get_linestyle()
            for t, h in zip(leg.get_texts(), leg.legend_handles, strict=True)
            if t.get_text().startswith("fit:")}
    assert keys == {"fit: converged": "-", "fit: unresolved": ":", "fit: poor fit": "--",
                    "fit: no decay": "--"}
    drawn = {ln.get_linestyle() for ax in fig.axes for ln in ax.lines
             if ln.get_linestyle() != "None"}
    assert drawn <= set(keys.values())


def test_cli_size_gives_pages_of_the_preset(demo_files, tmp_path):
    files = [str(p) for p in demo_files[:2]]
    rc = main(["export", *files, "--plot", "g2", "--plot", "saxs2d", "--format", "pdf",
               "--size", "double", "-o", str(tmp_path / "pdf"), "--quiet"])
    assert rc == 0
    pdf = (tmp_path / "pdf" / "combined_g2.pdf").read_bytes()
    sizes = pdf_page_sizes(pdf)
    assert len(sizes) >= 2 and all(w == pytest.approx(7.0, abs=0.01) for w, _ in sizes)
    assert pdf_font_problems(pdf) == []
    rc = main(["export", *files, "--plot", "g2", "--format", "png", "--size", "single",
               "-o", str(tmp_path / "png"), "--quiet"])
    assert rc == 0
    names = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert names[0] == "combined_g2_p1.png" and len(names) >= 3


@pytest.mark.parametrize("layout", ["qbin", "file", "combined"])
@pytest.mark.parametrize("preset", PRESETS)
def test_g2_layouts_and_a_wide_grid_fit_the_page(demo_files, preset, layout):
    """The g2 tab's own column count (3) and its other layouts, on every page size."""
    from xpcsviewer.export import make_figures
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io import read_result

    res = [read_result(p) for p in demo_files[:2]]
    fits = fit_curves(g2_blocks(res), FitSpec("single"))
    for fig in make_figures("g2", res, preset, fits=fits, layout=layout, ncols=3):
        assert fig.get_figwidth() == pytest.approx(WIDTH[preset], abs=0.05)
        assert text_problems(fig) == []
