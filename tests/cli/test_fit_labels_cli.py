"""Issue 48 on the command line: the JSON states the factor of understated errors and
both interval levels; the table prints "-" and the reason for a tau that may not be
quoted, never the optimum's number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.cli.test_fit import write_g2_file
from xpcsviewer.cli import main

N_Q = 3


def _write(path: Path) -> Path:
    # bin 1: a decay; bin 2: flat, errors 40x too small; bin 3: flat, right errors
    rng = np.random.default_rng(7)
    frames = np.unique(np.geomspace(1, 60000, 50).astype(int))
    dt = 1e-5
    tau = frames * dt
    sd = 0.004
    g2 = 1.0 + rng.normal(0.0, sd, (tau.size, N_Q))
    g2[:, 0] += 0.2 * np.exp(-2 * tau / 0.01)
    err = np.full_like(g2, sd)
    err[:, 1] = sd / 40
    return write_g2_file(path, frames, dt, np.array([0.004, 0.006, 0.008]), g2, err)


def test_json_and_table_say_what_may_be_quoted(tmp_path, capsys):
    f = _write(tmp_path / "labels_results.hdf")
    out = tmp_path / "fit.json"
    assert main(["fit", str(f), "--model", "single", "-o", str(out)]) == 0
    rec = json.loads(out.read_text())["files"][0]
    assert rec["status"] == ["converged", "errors_understated", "no_decay"], rec["status_detail"]
    assert rec["error_factor"][1] > 25 and rec["error_factor"][2] < 2
    assert rec["status_detail"][1].startswith(f"scatter {rec['error_factor'][1]:.3g}x")
    assert rec["tau"]["value"][0] is not None and rec["tau"]["value"][1:] == [None, None]
    capsys.readouterr()
    assert main(["fit", str(f), "--model", "single"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    assert head[-1] == "reason"
    row = next(x for x in lines if " errors_understated " in x)
    cells = row.split()
    assert cells[head.index("tau_s")] == "-"
    assert "x the stated errors" in row


def test_bayes_json_states_both_interval_levels():
    from xpcsviewer.fitting.bayes_diagnostics import HDI_PROB
    from xpcsviewer.fitting.results import STATUS_INTERVALS

    assert HDI_PROB == 0.94
    assert "5 % / 95 %" in STATUS_INTERVALS and "68 %" in STATUS_INTERVALS


def test_table_says_when_least_squares_and_nuts_disagree():
    from xpcsviewer.commands.fit import fit_table

    def entry(v, mean):
        return {"value": v, "error": [None] * 2, "mean": mean, "std": [1e-4] * 2}

    rec = {
        "path": "x_results.hdf", "model": "single", "models": ["single"] * 2,
        "q": [0.001, 0.002], "phi": [0.0, 0.0], "bins": [1, 2],
        "status": ["unresolved", "converged"], "status_lsq": ["converged", "converged"],
        "status_detail": ["tau sd 55 % >= 50 %", ""], "chi2_red": [1.0, 1.0],
        "tau_lower_limit": [None, None], "tau_upper_limit": [None, None],
        "limit_param": ["", ""],
        "tau": entry([1e-3, 2e-3], [1e-3, 2e-3]), "contrast": entry([0.2, 0.2], [0.2, 0.2]),
        "sampled": [True, True], "r_hat_max": [1.0, 1.0], "ess_min": [900.0, 900.0],
        "divergences": [0, 0], "bayes": {"num_chains": 4},
    }
    lines = fit_table([rec])
    assert lines[1].endswith("tau sd 55 % >= 50 %; least squares: converged")
    assert "least squares" not in lines[2]
    assert lines[1].split()[lines[0].split().index("tau_s")] == "-"  # not quoted
