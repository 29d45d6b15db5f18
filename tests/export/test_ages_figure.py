"""Issue 35: the ages figure draws what :mod:`xpcsviewer.views.ages` says (the Two-Time
tab's rule): tau against age by marker kind on a hand-made set of statuses, the
windows' bands (against a point-in-polygon brute force), the law's 95 % band (against
NumPy's own weighted fit), and the CSV table."""

from __future__ import annotations

import copy
import importlib.util
import io
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

_FAKE = Path(__file__).resolve().parent / "fake_results.py"


# ------------------------------------------------------------------ bands
@pytest.mark.parametrize("way", ["age", "t1"])
@pytest.mark.parametrize("lo,hi", [(0.0, 0.3), (0.2, 0.5), (0.45, 0.9), (0.9, 1.2),
                                   (1.5, 2.0)])
def test_band_is_the_window_on_the_stored_half(way, lo, hi):
    from matplotlib.path import Path as MplPath

    from xpcsviewer.views.ages import band_polygon

    t_end = 1.0
    poly = band_polygon(lo, hi, t_end, way)
    g = np.linspace(-0.05, 1.05, 221)
    x, y = (a.ravel() for a in np.meshgrid(g, g))  # x = t2, y = t1
    key = (x + y) / 2 if way == "age" else y
    inside = (y <= x) & (y >= 0) & (x <= t_end) & (key >= lo) & (key <= hi)
    if not inside.any():
        assert poly.shape == (0, 2)
        return
    got = MplPath(poly).contains_points(np.c_[x, y], radius=1e-9)
    # points off the edges by more than a grid step agree exactly
    edge = np.zeros_like(x, bool)
    step = g[1] - g[0]
    for d in (-step, step):
        for dx, dy in ((d, 0), (0, d)):
            xx, yy = x + dx, y + dy
            k2 = (xx + yy) / 2 if way == "age" else yy
            edge |= inside != ((yy <= xx) & (yy >= 0) & (xx <= t_end) & (k2 >= lo) & (k2 <= hi))
    assert np.array_equal(got[~edge], inside[~edge])
    # mirrored: the same band with t1 and t2 swapped
    np.testing.assert_allclose(band_polygon(lo, hi, t_end, way, mirror=True), poly[:, ::-1])


# ------------------------------------------------------------------ the law's band
def test_law_band_is_numpys_weighted_fit():
    from xpcsviewer.fitting.ageing_law import fit_law
    from xpcsviewer.views.ages import law_line

    rng = np.random.default_rng(4)
    t = np.array([1.0, 2.0, 3.0, 5.0, 8.0])
    err = 0.05 * (1 + t)
    tau = 0.5 + 0.3 * t + rng.normal(0, err)
    for law in ("linear", "power"):
        lf = fit_law(t, tau, err, law)
        f = SimpleNamespace(law=law, laws={law: [lf]}, t_w=np.stack([t, t])[:, :, None],
                            tau=np.stack([tau, tau])[:, :, None],
                            tau_err=np.stack([err, err])[:, :, None])
        line = law_line(f, 0, law)
        x, y, e = (t, tau, err) if law == "linear" else (np.log(t), np.log(tau), err / tau)
        p, cov = np.polyfit(x, y, 1, w=1 / e, cov="unscaled")
        # scaled as the law scaled its errors (its stated slope error)
        cov = cov * lf.error[lf.slope_name] ** 2 / cov[0, 0]
        xx = line.t if law == "linear" else np.log(line.t)
        sd = np.sqrt(cov[0, 0] * xx * xx + 2 * cov[0, 1] * xx + cov[1, 1])
        mid = np.polyval(p, xx)
        z = 1.959963984540054
        ref = (mid - z * sd, mid + z * sd) if law == "linear" else (
            np.exp(mid - z * sd), np.exp(mid + z * sd))
        np.testing.assert_allclose(line.tau, mid if law == "linear" else np.exp(mid),
                                   rtol=1e-9)
        np.testing.assert_allclose(line.lo, ref[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(line.hi, ref[1], rtol=1e-9)


# ------------------------------------------------------------------ figure and table
@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    """The analysis of a small two-time file, with hand-set statuses of the tau
    against age: every marker kind of the constant-age cuts, none of constant t1."""
    from xpcsviewer.io import read_result
    from xpcsviewer.jobs.ages_bin import AgesRequest, run_ages

    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_agefig", _FAKE)
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    d = tmp_path_factory.mktemp("agefig")
    fake.make_result(d / "G001_results.hdf", seed=5, kind="twotime", n_c2=100)
    res = read_result(d / "G001_results.hdf")
    tt = res.twotime
    o = run_ages(AgesRequest(str(res.path), 0, int(tt.processed_bins[0]), tt.n_frames,
                             tt.t0, label=res.label))
    f = copy.deepcopy(o.fits)
    f.status[0, :, 0] = ["converged", "unresolved", "unresolved", "at_bound", "misfit"]
    f.status[1, :, 0] = "failed"
    f.tau[0, :, 0] = [0.01, 0.02, np.nan, np.nan, 0.05]
    f.tau_err[0, :, 0] = [0.001, np.nan, np.nan, np.nan, 0.01]
    f.tau[1], f.tau_err[1] = np.nan, np.nan
    f.fits.tau_lower_limit[:] = np.nan
    f.fits.tau_upper_limit[:] = np.nan
    f.fits.tau_lower_limit[2] = 0.2  # rows (way, window, bin): row 2 = age, window 3
    f.fits.tau_upper_limit[3] = 0.003
    return res, o.__class__(o.request, o.source, o.n_frames, o.frame_time, o.cuts, f)


def test_tau_markers_follow_the_rule(outcome):
    from xpcsviewer.export import make_figure
    from xpcsviewer.views.ages import ages_of, tau_drawing

    res, o = outcome
    tw = ages_of(o.fits, 0, 0)
    d = tau_drawing(o.fits, "age", 0)
    assert {k: (list(p.x), list(p.y)) for k, p in d.tau.items()} == {
        "filled": ([tw[0]], [0.01]), "open": ([tw[1]], [0.02]),
        "limit_up": ([tw[2]], [0.2]), "limit_down": ([tw[3]], [0.003])}
    assert d.left_out == {"misfit": 1}
    fig = make_figure("ages", [res], "double", ages=o)
    ax = fig.axes[1]
    pts = {}
    for ln in ax.get_lines():
        mk = ln.get_marker()
        if mk in ("o", "^", "v") and ln.get_linestyle() == "None" and len(ln.get_xdata()):
            kind = mk + ("" if mk != "o" or str(ln.get_markerfacecolor()) == "none" else "*")
            pts.setdefault(kind, []).extend(zip(ln.get_xdata(), ln.get_ydata(), strict=True))
    assert pts == {"o*": [(tw[0], 0.01)], "o": [(tw[1], 0.02)], "^": [(tw[2], 0.2)],
                   "v": [(tw[3], 0.003)]}
    assert "not drawn: 1 misfit, 5 failed" in ax.get_title()
    # the cuts: every drawn point of views.ages, in both ways
    from xpcsviewer.views.ages import cut_curves

    for ax_c, way in ((fig.axes[2], "age"), (fig.axes[3], "t1")):
        want = sorted((x, y) for c in cut_curves(o.cuts, way, 0, o.fits)
                      for x, y in zip(c.x, c.y, strict=True))
        got = sorted((x, y) for ln in ax_c.get_lines() if ln.get_marker() == "o"
                     for x, y in zip(ln.get_xdata(), ln.get_ydata(), strict=True))
        assert got == want and len(got) > 50


@pytest.mark.parametrize("size", ["single", "double", "slide"])
def test_journal_sizes(outcome, size):
    from xpcsviewer.export import SIZE_PRESETS, make_figure

    res, o = outcome
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "constrained_layout not applied"
        fig = make_figure("ages", [res], size, ages=o, bands="both")
        fig.savefig(io.BytesIO(), format="png", dpi=50)
    w, h = fig.get_size_inches()
    assert w == pytest.approx(SIZE_PRESETS[size].width)
    assert h <= SIZE_PRESETS[size].max_height + 1e-9


def test_csv_table(outcome, tmp_path):
    from xpcsviewer.export.files import write_table_csv
    from xpcsviewer.views.ages import ages_columns, cut_curves

    _, o = outcome
    cols, header = ages_columns(o)
    n = sum(c.x.size for w in ("age", "t1") for c in cut_curves(o.cuts, w, 0, o.fits))
    assert cols["lag_s"].size == n and cols["tw_way"].size == 10
    assert list(cols["status"][:5]) == ["converged", "unresolved", "unresolved", "at_bound",
                                       "misfit"]
    assert cols["tau_lower_limit_s"][2] == 0.2 and cols["tau_upper_limit_s"][3] == 0.003
    assert any(line.startswith("law linear:") for line in header)
    path = write_table_csv(tmp_path / "ages.csv", cols, header)
    text = path.read_text()
    assert text.count("\n") == len(header) + 1 + n


def test_a_request_equals_itself_without_q():
    """A bin of unknown q (NaN) must not make every result of the tab look stale."""
    from xpcsviewer.jobs.ages_bin import AgesRequest, parse_seconds

    a = AgesRequest("/f.hdf", 0, 3, 100, 1e-3, q=float(np.nan))
    assert a == AgesRequest("/f.hdf", 0, 3, 100, 1e-3, q=float(np.float64("nan")), label="f")
    assert a != AgesRequest("/f.hdf", 0, 3, 100, 1e-3, n=4)
    assert parse_seconds("1, 3;5", "ages") == (1.0, 3.0, 5.0)
    with pytest.raises(ValueError, match="widths: '-1' must be a finite time >= 0 s"):
        parse_seconds("-1", "widths")
