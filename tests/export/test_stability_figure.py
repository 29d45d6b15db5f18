"""Issue 33 (3): the exported Stability figure says what the tab says: segments on the
SAXS-1D scale and the noise-aware drift verdict (it kept "I (arb. units)" and the old
relative change that flagged B0147 from its noisy tail)."""

import matplotlib

matplotlib.use("Agg")


def _flat(text):  # a long title is wrapped onto lines by the export's layout pass
    return " ".join(text.split())


def _fig(path):
    from xpcsviewer.export import make_figure
    from xpcsviewer.io import read_result
    from xpcsviewer.views.stability import stability_analysis, stability_summary

    res = read_result(path)
    fig = make_figure("stability", [res])
    st = stability_analysis(res.saxs_1d_segments, res.qmap, 0.10, saxs_1d=res.saxs_1d)
    return fig, stability_summary(st, res.label)


def test_demo_damage_figure_says_the_tabs_verdict(demo_set_dir):
    path = sorted(demo_set_dir.glob("E01*_results.hdf"))[0]
    fig, summary = _fig(path)
    ax = fig.axes[0]
    assert _flat(ax.get_title()) == _flat(summary) and "\u26a0" in summary
    assert "arb." not in ax.get_ylabel()
    assert any("time mean" in t.get_text() for t in fig.legends[0].get_texts()) if fig.legends \
        else any("time mean" in line.get_label() for line in ax.get_lines())


def test_real_b0147_figure_is_stable_on_the_saxs1d_scale(real_data_dir):
    path = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*00001_00200_results.hdf"))[0]
    fig, summary = _fig(path)
    ax = fig.axes[0]
    assert _flat(ax.get_title()) == _flat(summary) and "\u2713" in summary
    assert "segments \u00f7" in ax.get_ylabel()
