"""Issue 33: the series figure draws what :func:`xpcsviewer.views.series.series_drawing`
says (the Series tab's rule), on a hand-made table with every status."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.jobs.series import FileFit, SeriesTable


def _bin(status, tau, lo=None, hi=None, c=0.2):
    return {"bin": 1, "q": 0.01, "phi": 0.0, "status": status, "tau_s": tau,
            "tau_err_s": None if tau is None else 0.1 * tau, "tau_lower_limit_s": lo,
            "tau_upper_limit_s": hi, "contrast": c, "contrast_err": 0.01, "model": "single"}


@pytest.fixture
def table():
    rows = [_bin("converged", 0.5), _bin("unresolved", 0.8), _bin("unresolved", None, lo=2.0),
            _bin("at_bound", None, hi=0.01), _bin("poor_fit", 2e-6), _bin("no_decay", 13.0),
            _bin("misfit", 0.3), _bin("failed", None), _bin("unresolved", None)]
    t = SeriesTable("index")
    t.extend([FileFit(f"/f{i}.hdf", None, None, [b]) for i, b in enumerate(rows)])
    return t


def test_the_drawing_rule(table):
    from xpcsviewer.views.series import left_out_counts, not_drawn_text, series_drawing

    (d,) = series_drawing(table, [1])
    got = {k: (list(p.x), list(p.y)) for k, p in d.tau.items()}
    assert got == {"filled": ([0.0], [0.5]), "open": ([1.0], [0.8]),
                   "limit_up": ([2.0], [2.0]), "limit_down": ([3.0], [0.01])}
    np.testing.assert_allclose([d.tau["filled"].lo[0], d.tau["filled"].hi[0]], [0.45, 0.55])
    assert list(d.contrast.x) == [0.0]
    counts = left_out_counts([d])
    assert list(counts) == ["unresolved", "misfit", "poor_fit", "no_decay", "failed"]
    assert not_drawn_text([d]) == ("not drawn: 1 unresolved, 1 misfit, 1 poor fit, "
                                   "1 no decay, 1 failed")
    # log x leaves out x = 0 (and counts it)
    (dl,) = series_drawing(table, [1], log_x=True)
    assert dl.tau["filled"].x.size == 0 and dl.left_out["converged"] == 1


def test_the_figure_draws_the_rule(table):
    from xpcsviewer.export.series import series_figure

    fig = series_figure(table, [1])
    ax = fig.axes[0]
    pts = {}
    for ln in ax.get_lines():
        mk = ln.get_marker()
        if mk in ("o", "^", "v") and len(ln.get_xdata()):
            kind = mk + ("" if mk != "o" or str(ln.get_markerfacecolor()) == "none" else "*")
            pts.setdefault(kind, []).extend(zip(ln.get_xdata(), ln.get_ydata(), strict=True))
    assert pts == {"o*": [(0.0, 0.5)], "o": [(1.0, 0.8)], "^": [(2.0, 2.0)],
                   "v": [(3.0, 0.01)]}
    # the y axis holds measured tau only (not 2e-6 .. 13 s)
    lo, hi = ax.get_ylim()
    assert lo > 1e-3 and hi < 10
    assert "not drawn: 1 unresolved" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95 % lower limit" in labels and "95 % upper limit" in labels


def test_the_figure_takes_a_journal_size(table):
    """The GUI's Export Figure size choice reaches the series figure too."""
    from xpcsviewer.export._fig_common import SIZE_PRESETS
    from xpcsviewer.export.series import series_figure

    for key in ("single", "slide"):
        fig = series_figure(table, [1], size=key)
        assert fig.get_size_inches()[0] == SIZE_PRESETS[key].width
        fonts = {t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize"))}
        assert max(fonts) <= SIZE_PRESETS[key].font + 1e-9


def test_the_figure_keeps_unrelated_files_apart(tmp_path):
    """Issue 49: files of other samples or partitions are lines of their own, each with
    its q; a note under the axes says what was not joined and why."""
    from xpcsviewer.export import save_figure
    from xpcsviewer.export.series import series_figure

    def f(name, q, tau, radius):
        b = {**_bin("converged", tau), "q": q}
        return FileFit(f"/d/{name}_results.hdf", None, None, [b], sample={"radius": radius})

    t = SeriesTable("index")
    t.extend([f("A02", 0.001612, 3.5e-3, 2.5e-7), f("F01", 0.001612, 3.4e-3, 2.5e-7),
              f("H01", 0.004355, 6.2e-3, 1e-7)])
    fig = series_figure(t, [1])
    ax = fig.axes[0]
    labels = [x.get_text() for x in ax.get_legend().get_texts()]
    assert labels[:2] == ["q = 0.001612 \u00c5$^{-1}$ (A02 +1)",
                          "q = 0.004355 \u00c5$^{-1}$ (H01)"]
    lines = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and len(ln.get_xdata())
             and str(ln.get_markerfacecolor()) != "none"]
    assert sorted(ln.get_xdata().tolist() for ln in lines) == [[0.0, 1.0], [2.0]]
    note = fig._supxlabel.get_text().replace("\n", " ")
    assert note.startswith("not joined to A02 +1 (lines of their own): H01 (other sample: "
                           "radius 1e-07 vs 2.5e-07; its bins' q differ by > 2 %")
    save_figure(fig, tmp_path / "s.png")  # the note fits the page (constrained layout)
    assert (tmp_path / "s.png").stat().st_size > 10_000
