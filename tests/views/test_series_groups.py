"""Issue 49 item 1: a Series line joins only files of one sample on one q-partition
(:mod:`xpcsviewer.views.series_groups`); the others get lines of their own, labelled with
their own q, and a note says what was not joined and why."""

from __future__ import annotations

import numpy as np

from xpcsviewer.jobs.series import COLUMNS, GROUP_COLUMN, FileFit, SeriesTable
from xpcsviewer.views.g2 import Q_TOL
from xpcsviewer.views.series import series_drawing
from xpcsviewer.views.series_groups import (
    file_groups,
    join_reason,
    not_joined_text,
    sample_identity,
    series_groups,
)

SILICA = {"radius": 2.5e-7, "description": "silica R = 250 nm, repeat 1 of 4",
          "temperature": 298.15}


def _file(name, qs, tau, sample=None, phi=0.0, status="converged"):
    bins = [{"bin": k + 1, "q": q, "phi": phi, "status": status, "tau_s": t,
             "tau_err_s": 0.1 * t, "tau_lower_limit_s": None, "tau_upper_limit_s": None,
             "contrast": 0.2, "contrast_err": 0.01, "model": "single"}
            for k, (q, t) in enumerate(zip(qs, tau, strict=True))]
    return FileFit(f"/data/{name}_results.hdf", None, None, bins,
                   sample=dict(SILICA if sample is None else sample))


def _table(*files):
    t = SeriesTable("index")
    t.extend(list(files))
    return t


Q = [0.0016, 0.0024, 0.0032]


def test_repeats_of_one_sample_on_one_partition_join():
    # the description narrates ("repeat k of 4") and the temperature is a condition:
    # neither splits a series
    t = _table(*(_file(f"F0{k}", Q, [3e-3, 1.5e-3, 8e-4],
                       {**SILICA, "description": f"repeat {k} of 4",
                        "temperature": 298.15 + k}) for k in range(1, 5)))
    (g,) = series_groups(t)
    assert g.files == (0, 1, 2, 3) and g.reason == ""
    assert not_joined_text(t) == ""
    d = series_drawing(t, [1, 2])
    assert [x.label() for x in d] == ["q=0.0016", "q=0.0024"]  # as before issue 49
    assert d[0].tau["filled"].x.tolist() == [0, 1, 2, 3]


def test_bins_within_the_g2_tolerance_join_beyond_it_split():
    a = _file("A", Q, [3e-3] * 3)
    near = _file("B", [q * (1 + 0.5 * Q_TOL) for q in Q], [3e-3] * 3)
    far = _file("C", [q * (1 + 2 * Q_TOL) for q in Q], [3e-3] * 3)
    assert join_reason(a, near) is None
    why = join_reason(a, far)
    assert why.startswith(f"its bins' q differ by > {100 * Q_TOL:g} %: bin 1 q 0.001664 vs 0.0016")
    groups = series_groups(_table(a, near, far))
    assert [g.files for g in groups] == [(0, 1), (2,)]


def test_another_sample_splits_even_on_the_same_partition():
    a = _file("A02", Q, [3e-3] * 3)
    b = _file("A01", Q, [1e-3] * 3, {**SILICA, "radius": 1e-7})
    c = _file("X", Q, [1e-3] * 3, {"description": "no radius stated"})
    t = _table(a, b, c)
    groups = series_groups(t)
    assert [g.files for g in groups] == [(0,), (1,), (2,)]
    assert groups[1].reason == "other sample: radius 1e-07 vs 2.5e-07"
    assert groups[2].reason == "other sample: radius not stated vs 2.5e-07"
    note = not_joined_text(t)
    assert note.startswith("not joined to A02 (lines of their own): A01 (other sample: "
                           "radius 1e-07 vs 2.5e-07), X (other sample")
    # a named sample: the name decides, whatever else is stated alike
    n1, n2 = ({"name": "LLPS S3"}, {"name": "LLPS S4"})
    assert join_reason(_file("n1", Q, [1] * 3, n1), _file("n2", Q, [1] * 3, n2)) == (
        "other sample: name 'LLPS S4' vs 'LLPS S3'")
    assert sample_identity({"name": b" S3 ", "temperature": 300.0, "radius": np.float32(1e-7)}
                           ) == {"name": "S3", "radius": float(np.float32(1e-7))}


def test_phi_and_disjoint_bins_split():
    a = _file("A", Q, [1] * 3)
    assert "\u03c6 differ" in join_reason(a, _file("B", Q, [1] * 3, phi=20.0))
    c = _file("C", Q, [1] * 3)
    for b in c.bins:
        b["bin"] += 10
    assert join_reason(a, c) == "other partition: no q-bin number in common"


def test_a02_h01_s05_lines_carry_their_own_q():
    """The issue's three targets: three samples, three partitions; bin 1 is three lines,
    at q 0.0016, 0.0044 and 0.0015, and no line joins two of them."""
    a02 = _file("A02_silica_R250nm_water", [0.001612, 0.0024], [3.5e-3, 1.6e-3])
    h01 = _file("H01_hot_pixels_R100nm", [0.004355, 0.005054], [6.2e-3, 4.6e-3],
                {"radius": 1e-7})
    s05 = _file("S05_timepix_timetag_tau200ns", [0.001458, 0.002145], [2.05e-7, 2.0e-7],
                {"tau": 2e-7})
    t = _table(a02, h01, s05)
    d = series_drawing(t, [1])
    assert [x.label() for x in d] == ["q=0.001612 (A02_silica_R250nm_water)",
                                      "q=0.004355 (H01_hot_pixels_R100nm)",
                                      "q=0.001458 (S05_timepix_timetag_tau\u2026)"]
    assert [x.tau["filled"].y.tolist() for x in d] == [[3.5e-3], [6.2e-3], [2.05e-7]]
    assert [x.tau["filled"].x.tolist() for x in d] == [[0.0], [1.0], [2.0]]
    note = not_joined_text(t)
    assert "H01_hot_pixels_R100nm (other sample: radius 1e-07 vs 2.5e-07; its bins' q " \
           "differ by > 2 %: bin 1 q 0.004355 vs 0.001612" in note
    assert "S05_timepix_timetag_tau\u2026 (other sample: radius not stated vs 2.5e-07; " \
           "its bins' q differ by > 2 %: bin 1 q 0.001458 vs 0.001612" in note


def test_the_csv_says_each_rows_group():
    bad = FileFit("/data/bad_results.hdf", None, None, error="unreadable")
    t = _table(_file("A", Q, [1] * 3), _file("B", Q, [1] * 3, {"radius": 1e-7}), bad,
               _file("C", Q, [2] * 3))
    assert file_groups(t) == [1, 2, None, 1]
    rows = t.rows(file_groups(t))
    assert rows[0] == [*COLUMNS[:2], "x:index", *COLUMNS[3:], GROUP_COLUMN]
    assert [r[-1] for r in rows[1:]] == [1, 1, 1, 2, 2, 2, None, 1, 1, 1]
    assert t.rows()[0][-1] == "chi2_red"  # one group: the columns of before
