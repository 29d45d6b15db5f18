"""Figures of every kind, atomic writers, and the g2/diffusion/two-time data preparation."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.export import (
    FIGURE_KINDS,
    make_figure,
    save_figure,
    write_csv,
    write_json,
)
from xpcsviewer.fitting.block_fits import fit_g2_blocks
from xpcsviewer.fitting.blocks import G2Block, g2_blocks
from xpcsviewer.fitting.results import fits_table, fits_to_dict
from xpcsviewer.jobs.figure_inputs import average_screen, stability_fit
from xpcsviewer.views.diffusion import diffusion_analysis
from xpcsviewer.views.g2 import (
    c2_time_axis,
    diffusion_points,
    g2_data_columns,
    g2_points,
    robust_ylim,
    twotime_g2_curves,
)

SIGNATURES = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF-"}


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def lsq_fits(fake_results):
    blocks = g2_blocks(fake_results)
    return fit_g2_blocks(blocks, model="single")


def _options(kind, fake, results, fits):
    if kind == "saxs2d":
        yy, xx = np.mgrid[0:64, 0:64]
        return {"image": 1.0 / (1.0 + np.hypot(yy - 32, xx - 32))}
    if kind == "g2":
        return {"fits": fits}
    if kind == "diffusion":
        return {"analysis": diffusion_analysis(fits, exponent=-2.0)}
    if kind == "twotime":
        return {"view": fake.fake_read_c2(results[0], 1, max_size=64)}
    if kind == "average":
        return {"summary": average_screen(results)}
    if kind == "g2stability":
        return {"fit": stability_fit(_inputs(kind, results)[0])}
    if kind == "ages":
        from xpcsviewer.jobs.ages_bin import bin_request, run_ages

        return {"ages": run_ages(bin_request(results[0]))}
    return {}


def _inputs(kind, results):
    """The results a kind draws: ``g2stability`` needs partial g2 snapshots."""
    if kind != "g2stability":
        return results
    import dataclasses

    mt = results[0].multitau
    part = np.stack([mt.g2, mt.g2 + 0.002, mt.g2 + 0.004])  # (P, T, Nd)
    snap = dataclasses.replace(
        mt,
        g2_partial=part,
        g2_partial_err=np.broadcast_to(mt.g2_err, part.shape).copy(),
        g2_partial_labels=np.array([100, 200, 300]),
    )
    return [dataclasses.replace(results[0], multitau=snap), *results[1:]]


def _axis_labels(fig) -> list[str]:
    return [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel()) if t]


@pytest.mark.parametrize("kind", sorted(FIGURE_KINDS))
def test_every_kind_renders_png_svg_pdf(kind, fake, fake_results, lsq_fits, tmp_path):
    inputs = {p.path: _digest(p.path) for p in fake_results}
    fig = make_figure(
        kind,
        _inputs(kind, fake_results),
        **_options(kind, fake, fake_results, lsq_fits),
    )
    labels = _axis_labels(fig)
    assert labels, f"{kind}: no axis labels"
    # Physical axes carry units in brackets (pixels, s, 1/A, ...).
    assert any("(" in t for t in labels), labels
    for suffix in (".png", ".svg", ".pdf"):
        out = tmp_path / f"{kind}{suffix}"
        save_figure(fig, out)
        head = out.read_bytes()[:200]
        if suffix == ".svg":
            assert b"<svg" in out.read_bytes()[:2000]
        else:
            assert head.startswith(SIGNATURES[suffix])
    # No temp files left, inputs untouched.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{kind}{s}" for s in (".png", ".svg", ".pdf")
    )
    assert {p.path: _digest(p.path) for p in fake_results} == inputs


def test_figures_do_not_use_pyplot(fake_results, lsq_fits):
    make_figure("g2", fake_results, fits=lsq_fits)
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        assert plt.get_fignums() == []


def test_g2_layouts_panel_counts(fake_results):
    n_bins = 6
    fig = make_figure("g2", fake_results, layout="qbin", ncols=3)
    assert sum(ax.axison for ax in fig.axes) == n_bins
    fig = make_figure("g2", fake_results, layout="file")
    assert sum(ax.axison for ax in fig.axes) == 2  # two multitau files
    fig = make_figure("g2", fake_results, layout="combined")
    assert sum(ax.axison for ax in fig.axes) == 1
    with pytest.raises(ValueError, match="layout"):
        make_figure("g2", fake_results, layout="grid")
    fig = make_figure("g2", fake_results, layout="qbin", max_panels=4)
    assert sum(ax.axison for ax in fig.axes) == 4
    assert "first 4 of 6 panels" in fig._suptitle.get_text()


def test_unknown_kind_and_bad_option(fake_results):
    with pytest.raises(ValueError, match="unknown figure kind"):
        make_figure("nope", fake_results)
    with pytest.raises(TypeError):
        make_figure("g2", fake_results, colour="red")


def test_save_refuses_input_files_and_bad_suffix(fake_results, tmp_path):
    fig = make_figure("qmap", fake_results)
    src = fake_results[0].path
    before = _digest(src)
    with pytest.raises(ValueError):
        save_figure(fig, src)
    renamed = tmp_path / "looks_like.png"
    renamed.write_bytes(src.read_bytes())
    with pytest.raises(ValueError, match="HDF5"):
        save_figure(fig, renamed)
    assert _digest(src) == before
    with pytest.raises(ValueError, match="format"):
        save_figure(fig, tmp_path / "x.bmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["looks_like.png"]


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    out = tmp_path / "t.csv"
    write_csv(out, {"a": [1.0, 2.0]})
    old = out.read_text()

    class Boom:
        def __array__(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_csv(out, {"a": Boom()})
    assert out.read_text() == old
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_write_csv_roundtrip_and_ragged(tmp_path):
    out = write_csv(
        tmp_path / "t.csv",
        {"x": np.array([0.1, 1 / 3, np.nan]), "n": [1, 2]},
        header_comment=["units: s", "second"],
    )
    lines = out.read_text().splitlines()
    assert lines[:3] == ["# units: s", "# second", "x,n"]
    assert lines[3].split(",") == [repr(0.1), "1"]
    assert float(lines[4].split(",")[0]) == 1 / 3  # full precision
    assert lines[5] == "nan,"


def test_write_json(tmp_path):
    out = write_json(
        tmp_path / "a.json", {"v": np.float64(1.5), "n": np.nan, "a": np.arange(3)}
    )
    assert json.loads(out.read_text()) == {"v": 1.5, "n": None, "a": [0, 1, 2]}


# ------------------------------------------------------------------ data prep
def test_g2_blocks_selection_and_invalid(fake_results):
    res = fake_results[0]
    blocks = g2_blocks(
        fake_results, qmin=0.0045, qmax=0.009, tmin=0.002, tmax=1.0
    )
    assert [b.file_index for b in blocks] == [0, 1]  # file 2 has no multitau
    b = blocks[0]
    np.testing.assert_array_equal(b.columns, [2, 3, 4])
    np.testing.assert_allclose(b.q, [0.005, 0.0065, 0.008])
    assert b.tau.min() >= 0.002 and b.tau.max() <= 1.0
    mt = res.multitau
    rows = np.flatnonzero((mt.tau >= 0.002) & (mt.tau <= 1.0))
    np.testing.assert_array_equal(b.g2, mt.g2[np.ix_(rows, [2, 3, 4])])
    # Inverted ranges are swapped.
    b2 = g2_blocks(fake_results, qmin=0.009, qmax=0.0045, tmin=1.0, tmax=0.002)[
        0
    ]
    np.testing.assert_array_equal(b2.g2, b.g2)
    # Missing points (g2 == 0, err == 0) are never drawn.
    full = g2_blocks([res])[0]
    t, y, _e = g2_points(full, 0)
    assert t.size == mt.tau.size - 3 and np.all(y != 0)


def test_lsq_fit_recovers_truth(fake, fake_results, lsq_fits):
    assert lsq_fits.n_curves == 12
    assert list(lsq_fits.status).count("converged") == 12
    tau_true = 1.0 / (fake.D_TRUE * lsq_fits.q**2)
    np.testing.assert_allclose(lsq_fits.params["tau"], tau_true, rtol=0.1)
    np.testing.assert_allclose(lsq_fits.params["contrast"][:6], fake.BETA, rtol=0.1)
    np.testing.assert_allclose(lsq_fits.params["contrast"][6:], 0.2, rtol=0.1)
    # The fitted curve evaluated here equals the model formula.
    grid = np.geomspace(1e-3, 1.0, 7)
    c = lsq_fits.curve([3], grid)[0]
    p = {n: lsq_fits.params[n][3] for n in lsq_fits.param_names}
    ref = p["baseline"] + p["contrast"] * np.exp(-2 * (grid / p["tau"]) ** p["stretch"])
    np.testing.assert_allclose(c, ref, rtol=1e-12)
    assert lsq_fits.find(1, 2) == 8 and lsq_fits.find(2, 0) is None


def test_fits_table_and_json(lsq_fits, tmp_path):
    cols, header = fits_table(lsq_fits)
    assert len(cols["file"]) == 12 and "tau_s" in cols and "tau_s_err" in cols
    out = write_csv(tmp_path / "fits.csv", cols, header)
    lines = [ln for ln in out.read_text().splitlines() if not ln.startswith("#")]
    assert len(lines) == 13
    d = fits_to_dict(lsq_fits)
    assert len(d["curves"]) == 12 and d["curves"][0]["status"] == "converged"
    back = json.loads(write_json(tmp_path / "fits.json", d).read_text())
    assert back["curves"][3]["params"]["tau"] == pytest.approx(
        lsq_fits.params["tau"][3], rel=1e-12
    )


def test_diffusion_points_drop_failed_and_gamma(lsq_fits):
    fits = lsq_fits
    fits.status = fits.status.copy()
    saved = fits.status[1]
    fits.status[1] = "at_bound"
    try:
        pts = diffusion_points(fits, "tau")
        assert [p.n_dropped for p in pts] == [1, 0]
        assert pts[0].q.size == 5 and 0.004 not in pts[0].q
        g = diffusion_points(fits, "gamma")
        np.testing.assert_allclose(g[0].y, 1.0 / pts[0].y, rtol=1e-12)
        np.testing.assert_allclose(g[0].y_err, pts[0].y_err / pts[0].y ** 2, rtol=1e-12)
    finally:
        fits.status[1] = saved
    with pytest.raises(ValueError):
        diffusion_points(fits, "rate")


def test_diffusion_figure_reports_D_near_truth(fake, fake_results, lsq_fits):
    from xpcsviewer.fitting import fit_diffusion

    pts = diffusion_points(lsq_fits)
    dr = fit_diffusion(pts[0].q, pts[0].y, pts[0].y_err, exponent=-2.0)
    assert abs(dr.D / fake.D_TRUE - 1) < 0.05
    fig = make_figure("diffusion", fake_results,
                      analysis=diffusion_analysis(lsq_fits, exponent=-2.0))
    texts = [t.get_text() for t in fig.legends[0].get_texts()]  # below the axes
    assert any("D = " in t for t in texts)


def test_twotime_g2_curves_and_axis(fake_results):
    res = fake_results[0]
    t_full, g_full, t_seg, g_seg = twotime_g2_curves(res.twotime, 1)
    n = res.twotime.n_frames
    np.testing.assert_allclose(t_full, np.arange(1, n) * res.twotime.t0)
    np.testing.assert_array_equal(g_full, res.twotime.g2_full[1, 1:])
    assert g_seg.shape == (5, n // 5 - 1) and t_seg.size == n // 5 - 1
    np.testing.assert_allclose(c2_time_axis(4, 0.5), [0, 0.5, 1.0, 1.5])
    with pytest.raises(IndexError):
        twotime_g2_curves(res.twotime, 3)
    assert twotime_g2_curves(None, 0) is None


def test_twotime_figure_time_extent(fake, fake_results):
    view = fake.fake_read_c2(fake_results[0], 0, max_size=50)  # stride 3
    assert view.stride == 3
    fig = make_figure("twotime", fake_results, view=view)
    im = fig.axes[0].get_images()[0]
    x0, x1, _, _ = im.get_extent()
    m = view.c2.shape[0]
    assert x1 - x0 == pytest.approx(m * view.t0)  # seconds, with the stride
    assert np.isclose(view.t0, 3 * fake_results[0].twotime.t0)


def test_g2_data_columns(fake_results):
    blocks = g2_blocks(fake_results[:1])
    cols, header = g2_data_columns(blocks)
    assert "A001:tau_s" in cols and np.isnan(cols["A001:bin1:g2"][-1])
    assert len(cols) == 2 + 2 * 6 and header
    b = blocks[0]
    np.testing.assert_array_equal(cols["A001:delay_frames"], b.delay_frames)
    np.testing.assert_allclose(cols["A001:tau_s"], b.tau, rtol=1e-12)


def test_g2_csv_writes_delays_from_the_integer_lags(tmp_path):
    """6 frames x 1e-5 s is written 6e-05, not the product's 6.000000000000001e-05."""
    from xpcsviewer.export import write_csv

    frames = np.array([1, 2, 3, 6, 7, 12, 24, 96, 1000])
    t0 = 1e-5
    assert repr(float(frames[3] * t0)) == "6.000000000000001e-05"  # what was written
    n = frames.size
    block = G2Block(
        file_index=0, label="X", tau=frames * t0, g2=np.ones((n, 1)),
        g2_err=np.full((n, 1), 0.01), valid=np.ones((n, 1), bool), columns=np.array([0]),
        q=np.array([0.01]), phi=np.array([0.0]), bin_labels=["q=0.01"],
        delay_frames=frames, t0=t0)
    cols, header = g2_data_columns([block])
    text = write_csv(tmp_path / "g2.csv", cols, header).read_text()
    rows = [ln.split(",") for ln in text.splitlines() if not ln.startswith("#")]
    assert rows[0][:2] == ["X:tau_s", "X:delay_frames"]
    assert [r[0] for r in rows[1:]] == ["1e-05", "2e-05", "3e-05", "6e-05", "7e-05",
                                        "0.00012", "0.00024", "0.00096", "0.01"]
    assert [int(r[1]) for r in rows[1:]] == frames.tolist()
    assert "0000000000" not in text


def test_export_package_is_qt_and_jax_free():
    import subprocess

    code = (
        "import sys, xpcsviewer.export; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6','pyqtgraph','jax')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "XPCS_JAX_CACHE_DIR": "off"},
    )
    assert out.stdout.strip() == "[]"


def test_twotime_and_saxs2d_read_the_file(fake_results, tmp_path):
    """Without a view/image option the figures read the file (strided C2, SAXS image)."""
    from xpcsviewer.io import read_c2, read_result

    res = [read_result(r.path) for r in fake_results]
    before = _digest(res[0].path)
    fig = make_figure("twotime", res, bin_index=1, max_size=40, correct_diagonal=True)
    img = fig.axes[0].get_images()[0].get_array()
    view = read_c2(res[0].path, 1, max_size=40, correct_diagonal=True)
    np.testing.assert_array_equal(np.asarray(img), view.c2)
    assert view.stride == 3 and img.shape == (40, 40)
    fig2 = make_figure("saxs2d", res, log=False, beam_center=False)
    from xpcsviewer.io import read_saxs_2d

    np.testing.assert_array_equal(
        np.asarray(fig2.axes[0].get_images()[0].get_array()), read_saxs_2d(res[0].path)
    )
    save_figure(fig, tmp_path / "tt.pdf")
    assert _digest(res[0].path) == before


def test_robust_ylim_ignores_isolated_outliers():
    rng = np.random.default_rng(0)
    t = np.linspace(0, 5, 200)
    y = 1.0 + 0.8 * np.exp(-4 * t) + rng.normal(0, 0.002, 200)  # mostly baseline
    y_bad = y.copy()
    y_bad[[0, 50]] = [336.0, 217.0]  # what real files hold where a bin had no photons
    lo, hi = robust_ylim([y_bad])
    # Every genuine point stays inside, the wild ones outside.
    good = np.delete(y_bad, [0, 50])
    span = good.max() - good.min()
    assert (lo, hi) == pytest.approx((good.min() - 0.05 * span, good.max() + 0.05 * span))
    assert robust_ylim([y]) == pytest.approx(
        (y.min() - 0.05 * (y.max() - y.min()), y.max() + 0.05 * (y.max() - y.min())))
    assert robust_ylim([np.array([np.nan])]) is None
