"""Issues 32 and 44: the Diffusion, Average, g2 stability and ages figures draw the
analysis they are handed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.export import make_figure
from xpcsviewer.views.diffusion import diffusion_analysis

_FAKE = Path(__file__).resolve().parent / "fake_results.py"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_handed", _FAKE)
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    d = tmp_path_factory.mktemp("handed")
    return [fake.make_result(d / "H001_results.hdf", seed=1, kind="multitau"),
            fake.make_result(d / "H002_results.hdf", seed=2, kind="multitau")]


@pytest.fixture(scope="module")
def fits(results):
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.blocks import g2_blocks

    return fit_g2_blocks(g2_blocks(results), model="single")


def _no_fitting(monkeypatch):
    import xpcsviewer.fitting as fitting
    import xpcsviewer.jobs.average as average

    def boom(*_a, **_k):
        raise AssertionError("a figure computed an analysis")

    for name in ("diffusion_verdict", "fit_diffusion"):
        monkeypatch.setattr(fitting, name, boom)
    monkeypatch.setattr(average, "screen_files", boom)


def test_diffusion_figure_draws_the_given_analysis(results, fits, monkeypatch):
    analysis = diffusion_analysis(fits, "gamma", exponent=-2.0)
    assert analysis.quantity == "gamma" and len(analysis.laws) == 2
    _no_fitting(monkeypatch)
    fig = make_figure("diffusion", results, analysis=analysis)
    ax = fig.axes[0]
    drawn = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    assert len(drawn) == 2  # one power law per file, the one in the analysis
    for ln, law in zip(drawn, analysis.laws, strict=True):
        np.testing.assert_allclose(ln.get_ydata(), 1.0 / law.power.curve(ln.get_xdata()))
    texts = [t.get_text() for t in fig.legends[0].get_texts()]  # below the axes
    assert sum("(fixed)" in t for t in texts) == 2
    assert "\u0393" in ax.get_ylabel()
    # none: the figure says so (it never fits)
    fig = make_figure("diffusion", results, analysis=None)
    assert "no g2 fits" in fig.axes[0].texts[0].get_text()
    for old in ("fits", "quantity", "qmin", "exponent"):  # its inputs are the analysis
        with pytest.raises(TypeError):
            make_figure("diffusion", results, analysis=analysis, **{old: None})


def test_the_tab_job_and_the_export_use_one_analysis(results, fits):
    import xpcsviewer.commands.export as command
    from xpcsviewer.gui.panels._diffusion_jobs import diffusion_job

    opts = {"quantity": "tau", "qmin": None, "qmax": None, "exponent": None}
    files = diffusion_job(fits, results, opts)
    handed = command._figure_inputs("diffusion", results, fits)["analysis"]
    assert [f.label for f in files] == [law.label for law in handed.laws]
    for f, law in zip(files, handed.laws, strict=True):
        np.testing.assert_array_equal(f.points.y, law.points.y)
        assert f.verdict.verdict == law.verdict.verdict
        assert f.power.prefactor == law.power.prefactor
        assert f.power.exponent == law.power.exponent


def test_average_figure_draws_the_given_screen(results, monkeypatch):
    from xpcsviewer.jobs.figure_inputs import average_screen

    summary = average_screen(results)
    _no_fitting(monkeypatch)
    fig = make_figure("average", results, statistic="baseline", summary=summary)
    assert f"of {len(results)} files accepted" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="no screening"):
        make_figure("average", results)


def test_g2stability_figure_draws_the_given_fit(results, monkeypatch):
    import dataclasses

    import xpcsviewer.fitting.stability as stability
    from xpcsviewer.jobs.figure_inputs import stability_fit

    mt = results[0].multitau
    part = np.stack([mt.g2, mt.g2 + 0.002, mt.g2 + 0.004])  # (P, T, Nd)
    res = dataclasses.replace(results[0], multitau=dataclasses.replace(
        mt, g2_partial=part, g2_partial_err=np.broadcast_to(mt.g2_err, part.shape).copy(),
        g2_partial_labels=np.array([100, 200, 300])))
    fit = stability_fit(res)

    def boom(*_a, **_k):
        raise AssertionError("a figure fitted the snapshots")

    monkeypatch.setattr(stability, "fit_partial_snapshots", boom)
    fig = make_figure("g2stability", [res], fit=fit)
    curves = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "-"]
    assert len(curves) == int(np.isfinite(fit.fit_tau[:, 0]).sum())
    for ln in curves:
        np.testing.assert_array_equal(ln.get_xdata(), fit.grid)
    with pytest.raises(ValueError, match="no snapshot fits given"):
        make_figure("g2stability", [res])


def test_ages_figure_needs_its_analysis(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_handed2", _FAKE)
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    d = tmp_path_factory.mktemp("handed_ages")
    res = fake.make_result(d / "H003_results.hdf", seed=3, kind="twotime", n_c2=60)
    with pytest.raises(ValueError, match="no ages analysis given"):
        make_figure("ages", [res])
    for old in ("spacing", "n_windows", "ages_s", "widths_s", "model"):  # the job's now
        with pytest.raises(TypeError):
            make_figure("ages", [res], ages=object(), **{old: None})


def test_figure_modules_call_no_analysis():
    import xpcsviewer.export._fig_ages as fig_ages
    import xpcsviewer.export._fig_g2 as fig_g2
    import xpcsviewer.export._fig_multi as fig_multi

    src = "".join(Path(m.__file__).read_text() for m in (fig_g2, fig_multi, fig_ages))
    for name in ("diffusion_verdict", "fit_diffusion", "diffusion_points", "screen_files",
                 "average_files", "fit_partial_snapshots", "analyse_ages", "read_map"):
        assert name not in src, name
