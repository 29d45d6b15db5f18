"""Issue 49 item 1: the report's Series figure joins only files of one sample on one
q-partition, and its caption says what was not joined and why."""

from __future__ import annotations


def _section(name, q, tau, radius, start):
    b = {"bin": 1, "q": q, "phi": 0.0, "status": "converged", "tau_s": tau,
         "tau_err_s": 0.1 * tau, "tau_lower_limit_s": None, "tau_upper_limit_s": None,
         "contrast": 0.2, "contrast_err": 0.01, "model": "single"}
    return {"path": f"/nowhere/{name}_results.hdf", "series_bins": [b],
            "bins": [{"chi2_red": 1.0}], "provenance": {"start_time": start},
            "sample": {"radius": radius, "description": f"{name} of a run"}}


def _series_figure(sections):
    from xpcsviewer.report.build import _series

    figs, notes = _series(sections, 60.0)
    (fig,) = [f for f in figs if f["kind"] == "series"]
    assert notes == [] and fig["pngs"] and fig["note"] == ""
    return fig


def test_the_series_caption_names_what_was_not_joined():
    fig = _series_figure([
        _section("A02", 0.001612, 3.5e-3, 2.5e-7, "2026-01-01T00:00:00"),
        _section("H01", 0.004355, 6.2e-3, 1e-7, "2026-01-01T00:10:00"),
        _section("F01", 0.001612, 3.4e-3, 2.5e-7, "2026-01-01T00:20:00")])
    assert fig["caption"].startswith("series: \u03c4 and contrast per q-bin against the "
                                     "start time; not joined to A02 +1 (lines of their "
                                     "own): H01 (other sample: radius 1e-07 vs 2.5e-07; "
                                     "its bins' q differ by > 2 %")


def test_one_sample_on_one_partition_has_the_caption_of_before():
    fig = _series_figure([
        _section(f"F0{k}", 0.001612, 3.4e-3, 2.5e-7, f"2026-01-01T00:{10 * k}:00")
        for k in range(1, 4)])
    assert fig["caption"] == "series: \u03c4 and contrast per q-bin against the start time"
