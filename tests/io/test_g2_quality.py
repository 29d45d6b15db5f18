"""The suspect-error rule: a point whose error is below half its neighbours'."""

from __future__ import annotations

import numpy as np

from xpcsviewer.io.results.g2_quality import SUSPECT_ERROR_RATIO, suspect_errors


def test_rule_against_a_direct_loop():
    rng = np.random.default_rng(0)
    err = np.exp(rng.normal(-6, 0.1, size=(40, 5)))
    err[-1, :] *= np.array([0.2, 0.45, 0.55, 1.0, 3.0])  # the lone last delay
    err[10, 2] = 0.0  # no error: not compared, not a neighbour
    valid = np.ones_like(err, bool)
    valid[20, 1] = False
    got = suspect_errors(err, valid)
    want = np.zeros_like(got)
    for j in range(err.shape[1]):
        idx = [i for i in range(err.shape[0]) if valid[i, j] and err[i, j] > 0]
        for a, i in enumerate(idx):
            nb = [err[idx[a - 1], j]] if a > 0 else []
            nb += [err[idx[a + 1], j]] if a + 1 < len(idx) else []
            want[i, j] = err[i, j] < SUSPECT_ERROR_RATIO * min(nb)
    np.testing.assert_array_equal(got, want)
    assert got[-1, 0] and not got[-1, 3]
    assert not got[~valid].any() and not got[10, 2]


def test_smooth_errors_are_never_suspect():
    tau = np.geomspace(1e-5, 1.0, 61)
    err = 0.02 * (tau / tau[0]) ** -0.35
    assert not suspect_errors(err[:, None], np.ones((61, 1), bool)).any()
