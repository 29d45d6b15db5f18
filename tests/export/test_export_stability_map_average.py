"""Publication figures of the g2 stability, g2 map and Average tabs (demo files)."""

from __future__ import annotations

import dataclasses
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import QuadMesh
from matplotlib.container import ErrorbarContainer

from xpcsviewer.export import FIGURE_KINDS, make_figure, save_figure
from xpcsviewer.export.figures import AVERAGE_STATISTICS
from xpcsviewer.fitting.stability import drift_text, fit_partial_snapshots
from xpcsviewer.io import read_result
from xpcsviewer.jobs.average import AverageOptions, AverageSummary, FileStat
from xpcsviewer.jobs.figure_inputs import average_screen, stability_fit

TAU = "\u03c4 (s)"


@pytest.fixture(scope="module")
def demo(demo_set_dir):
    return {
        p.name.split("_")[0]: read_result(p) for p in sorted(demo_set_dir.glob("*_results.hdf"))
    }


@pytest.fixture(scope="module")
def repeats(demo):
    """Five in-memory repeats of A02 (same q-map and delays); #3 has other g2."""
    base = demo["A02"]
    rng = np.random.default_rng(5)
    out = []
    for i in range(5):
        mt = base.multitau
        g2 = mt.g2 + rng.normal(0.0, 2e-4, mt.g2.shape)
        if i == 3:
            g2 = 1.0 + 0.5 * (mt.g2 - 1.0)
        out.append(
            dataclasses.replace(
                base,
                path=Path(f"/nowhere/rep{i}_results.hdf"),
                multitau=dataclasses.replace(mt, g2=g2),
            )
        )
    return out


def _check_formats(fig, tmp_path: Path, name: str) -> None:
    """PNG (signature, pixel size), SVG (XML) and PDF files, nothing else left."""
    for suffix in (".png", ".svg", ".pdf"):
        save_figure(fig, tmp_path / f"{name}{suffix}")
    png = (tmp_path / f"{name}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    w, h = struct.unpack(">II", png[16:24])
    want = np.round(fig.get_size_inches() * 200).astype(int)  # save_figure: dpi=200
    assert (w, h) == tuple(want) and len(png) > 10_000
    root = ET.parse(tmp_path / f"{name}.svg").getroot()
    assert root.tag.endswith("svg")
    assert (tmp_path / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in tmp_path.iterdir() if p.stem == name) == sorted(
        f"{name}{s}" for s in (".pdf", ".png", ".svg")
    )


def test_new_kinds_registered():
    assert {"g2stability", "g2map", "average"} <= set(FIGURE_KINDS)


# ---------------------------------------------------------------- g2 stability
def test_g2stability_figure_shows_the_snapshots_and_fits(demo, tmp_path):
    res = demo["E01"]
    mt = res.multitau
    j = 2
    fig = make_figure("g2stability", [demo["A01"], res], file_index=1, bin_index=j,
                      fit=stability_fit(res))
    ax = fig.axes[0]
    want = [f"frames={int(n)}" for n in mt.g2_partial_labels]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == want
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in bars] == want
    for p, c in enumerate(bars):
        y = mt.g2_partial[p, :, j]
        ok = np.isfinite(y) & (y != 0)
        x_drawn, y_drawn = c.lines[0].get_data()
        np.testing.assert_array_equal(x_drawn, mt.tau[ok])
        np.testing.assert_array_equal(y_drawn, y[ok])
    # one fitted curve per converged snapshot fit, drawn on the fit grid
    fit = fit_partial_snapshots(
        mt.tau,
        mt.g2_partial,
        mt.g2_partial_err,
        mt.g2_partial_labels,
        res.qmap.dynamic_labels(),
    )
    curves = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    assert len(curves) == int(np.isfinite(fit.fit_tau[:, j]).sum()) > 0
    np.testing.assert_allclose(curves[-1].get_xdata(), fit.grid)
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == TAU and "g\u2082" in ax.get_ylabel()
    assert res.qmap.dynamic_labels()[j] in ax.get_title()
    head = fig._suptitle.get_text()
    assert head.startswith(drift_text(fit, j)) and "median of" in head
    # beam damage: the drift is above the default 10 % threshold
    assert "dynamics change" in head
    calm = make_figure("g2stability", [res], bin_index=j, threshold=1000.0, fit=fit)
    assert "stationary within 1000 %" in calm._suptitle.get_text()
    _check_formats(fig, tmp_path, "stab")


def test_g2stability_without_snapshots_and_bad_options(demo):
    assert stability_fit(demo["A01"]) is None
    fig = make_figure("g2stability", [demo["A01"]], fit=None)
    assert not any(ax.axison for ax in fig.axes)
    assert "no partial g2 snapshots" in fig.axes[0].texts[0].get_text()
    fit = stability_fit(demo["E01"])
    with pytest.raises(TypeError):
        make_figure("g2stability", [demo["E01"]], q_bin=1, fit=fit)
    with pytest.raises(IndexError):
        make_figure("g2stability", [demo["E01"]], bin_index=99, fit=fit)
    # the figure fits nothing: it is handed the fits of this file's snapshots
    with pytest.raises(ValueError, match="no snapshot fits given"):
        make_figure("g2stability", [demo["E01"]])
    other = dataclasses.replace(fit, partial=fit.partial[:2])
    with pytest.raises(ValueError, match="are not of"):
        make_figure("g2stability", [demo["E01"]], fit=other)


# ---------------------------------------------------------------------- g2 map
def test_g2map_image_is_the_files_g2(demo, tmp_path):
    # A01 with missing points (no photons: g2 = err = 0, not valid), as real files have
    src = demo["A01"].multitau
    g2, err, valid = src.g2.copy(), src.g2_err.copy(), src.valid.copy()
    g2[-3:, 4] = err[-3:, 4] = 0.0
    valid[-3:, 4] = False
    valid[5, 0] = False
    mt = dataclasses.replace(src, g2=g2, g2_err=err, valid=valid)
    res = dataclasses.replace(demo["A01"], multitau=mt)
    j = 4
    fig = make_figure("g2map", [res], bin_index=j)
    ax_img = fig.axes[0]
    meshes = [c for c in ax_img.collections if isinstance(c, QuadMesh)]
    assert len(meshes) == 1
    arr = meshes[0].get_array()
    n_t, n_d = mt.g2.shape
    assert arr.shape == (n_d, n_t)
    assert (~valid).sum() > (~src.valid).sum()  # the demo itself has no last delay
    np.testing.assert_array_equal(np.ma.getmaskarray(arr), ~valid.T)
    np.testing.assert_array_equal(arr.compressed(), mt.g2.T[valid.T])
    # delay cells in s on a log axis, each delay inside its own cell
    edges = meshes[0].get_coordinates()[0, :, 0]
    assert edges.size == n_t + 1
    assert np.all(edges[:-1] < mt.tau) and np.all(mt.tau < edges[1:])
    assert ax_img.get_xscale() == "log" and ax_img.get_xlabel() == TAU
    assert "\u00c5\u207b\u00b9" in ax_img.get_ylabel()
    rows = np.round(ax_img.get_yticks() - 0.5).astype(int)
    ticks = [t.get_text() for t in ax_img.get_yticklabels()]
    assert ticks == [f"{res.qmap.dynamic_q[r]:.4g}" for r in rows]
    assert meshes[0].colorbar.ax.get_ylabel() == "g\u2082"
    assert f"{int((~valid).sum())} invalid points grey" in ax_img.get_title()
    # the profile of the selected bin
    ax_prof = fig.axes[-1]
    (bars,) = [c for c in ax_prof.containers if isinstance(c, ErrorbarContainer)]
    x, y = bars.lines[0].get_data()
    assert x.size == mt.tau.size - 3
    np.testing.assert_array_equal(x, mt.tau[valid[:, j]])
    np.testing.assert_array_equal(y, mt.g2[valid[:, j], j])
    assert res.qmap.dynamic_labels()[j] in ax_prof.get_title()
    assert ax_prof.get_xlabel() == TAU and ax_prof.get_xscale() == "log"
    _check_formats(fig, tmp_path, "map")


def test_g2map_normalized_qphi_and_no_data(demo):
    res = demo["B01"]  # q x phi partition
    fig = make_figure("g2map", [res], normalize=True, profile=False)
    assert len(fig.axes) == 2  # image and colorbar
    arr = fig.axes[0].collections[0].get_array()
    first = arr[:, 0].compressed()
    np.testing.assert_allclose(first, first[0])  # every bin starts at the same value
    assert "\u03c6" in fig.axes[0].get_ylabel()
    empty = make_figure("g2map", [demo["C01"]])
    assert "no multitau g2" in empty.axes[0].texts[0].get_text()
    with pytest.raises(TypeError):
        make_figure("g2map", [demo["A01"]], colour="red")
    with pytest.raises(IndexError):
        make_figure("g2map", [demo["A01"]], bin_index=16)


# --------------------------------------------------------------------- average
def _points(ax, marker):
    (ln,) = [ln for ln in ax.get_lines() if ln.get_marker() == marker]
    return ln.get_data()


def test_average_figure_draws_the_screen_it_is_given(repeats, tmp_path):
    opts = AverageOptions(mad_threshold=5.0)
    fig = make_figure("average", repeats, statistic="g2_z", options=opts,
                      summary=average_screen(repeats, opts))
    ax = fig.axes[0]
    xa, _ = _points(ax, "o")
    xr, yr = _points(ax, "x")
    np.testing.assert_array_equal(xa, [0, 1, 2, 4])
    np.testing.assert_array_equal(xr, [3])
    assert yr[0] > 5.0
    thresholds = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(thresholds) == 1 and set(thresholds[0].get_ydata()) == {5.0}
    assert [t.get_text() for t in ax.get_xticklabels()] == [r.label for r in repeats]
    assert ax.get_ylabel() == AVERAGE_STATISTICS["g2_z"] and "MADs" in ax.get_ylabel()
    assert "4 of 5 files accepted" in ax.get_title()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["accepted (4)", "rejected (1)"]
    _check_formats(fig, tmp_path, "avg")
    # baseline: two limit lines, every file plotted
    opts = AverageOptions(baseline_range=(0.9, 1.1))
    fig = make_figure(
        "average",
        repeats,
        statistic="baseline",
        options=opts,
        summary=average_screen(repeats, opts),
    )
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert sorted(ln.get_ydata()[0] for ln in lines) == [0.9, 1.1]
    xa, _ = _points(fig.axes[0], "o")
    assert xa.size == 5


def test_average_figure_uses_a_given_summary():
    stats = [
        FileStat(path=f"/d/f{i}_results.hdf", label=f"f{i}", intensity=1.0 + i)
        for i in range(30)
    ]
    stats[7].accepted, stats[7].reason = False, "test"
    summary = AverageSummary(output=None, error_method="sem", stats=stats)
    fig = make_figure("average", [], statistic="intensity", summary=summary)
    ax = fig.axes[0]
    xr, yr = _points(ax, "x")
    np.testing.assert_array_equal(xr, [7])
    np.testing.assert_array_equal(yr, [8.0])
    assert _points(ax, "o")[0].size == 29
    # too many files for names: the axis counts them
    assert "index" in ax.get_xlabel() and "(counts/pixel/frame)" in ax.get_ylabel()
    assert "errors: sem" in ax.get_title()
    with pytest.raises(ValueError, match="statistic"):
        make_figure("average", [], statistic="median", summary=summary)
    with pytest.raises(TypeError):
        make_figure("average", [], summary=summary, threshold=3)


def test_average_figure_incompatible_files(demo):
    fig = make_figure("average", [], summary=average_screen([demo["A01"], demo["E01"]]))
    assert not any(ax.axison for ax in fig.axes)
    text = fig.axes[0].texts[0].get_text()
    assert "cannot average" in text and "E01_beam_damage" in text
