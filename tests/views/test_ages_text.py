"""Issue 49 item 3: the ages status says when no window could compare the two cuts and
why, and the law's one-line result says what an undetermined law lacked."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from xpcsviewer.fitting.ageing_law import LawFit
from xpcsviewer.views import ages as av


def _stub(status: list[list[str]], testable: list[bool]):
    """Cuts and fits of one bin with 5 windows: each way's statuses and the windows
    where the flag could be tested."""
    w = len(testable)
    cuts = SimpleNamespace(windows=SimpleNamespace(n=w, centres=np.arange(w) + 1.0),
                           disagree=np.zeros((w, 1), bool))
    fits = SimpleNamespace(status=np.array(status, dtype=object)[:, :, None],
                           flag_testable=np.array(testable, bool)[:, None],
                           disagree=np.zeros((w, 1), bool))
    return cuts, fits


def test_no_window_could_compare_says_so_and_why():
    cuts, fits = _stub([["unresolved"] * 5, ["unresolved"] * 5], [False] * 5)
    text = av.disagree_text(cuts, 0, fits)
    assert text == ("no window could compare the two cuts (in none of the 5 windows did "
                    "both cuts converge)")
    # both converged in two windows, but tau was over half of each
    cuts, fits = _stub([["converged", "converged", "unresolved", "unresolved", "at_bound"],
                        ["converged", "converged", "converged", "unresolved", "unresolved"]],
                       [False] * 5)
    text = av.disagree_text(cuts, 0, fits)
    assert text.startswith("no window could compare the two cuts (where both converged "
                           "(2 of 5)")
    assert "over half the window" in text


def test_agreement_names_the_windows_compared():
    cuts, fits = _stub([["converged"] * 5, ["converged"] * 5], [True, True, False, True, False])
    text = av.disagree_text(cuts, 0, fits)
    assert text.startswith("the two ways agree within their errors in 3 of 5 windows")
    assert "the 0 of" not in text


def test_an_undetermined_law_says_what_it_lacked():
    nan = float("nan")
    law = LawFit("power", {"tau0": nan, "mu": nan}, {"tau0": nan, "mu": nan},
                 {"tau0": (nan, nan), "mu": (nan, nan)}, nan, 1, "undetermined")
    st = np.array([["unresolved"] * 5, ["unresolved"] * 5], dtype=object)[:, :, None]
    tau = np.full((2, 5, 1), np.nan)
    tau[0, 1, 0] = 5.0
    fits = SimpleNamespace(laws={"power": [law]}, law="power", status=st, tau=tau,
                           t_w=np.ones((2, 5, 1)), tau_err=np.ones((2, 5, 1)))
    text = av.law_verdict(fits, 0, "power")
    assert text.startswith("undetermined (1 \u03c4 drawn, 0 resolved; the law needs 3, 2 "
                           "resolved")
    assert "every constant-age cut unresolved" in text
