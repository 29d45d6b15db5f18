"""``xpcsviewer fit``: JSON/CSV/HDF5 outputs, exit codes, known answers."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.io import Multitau, QMap, XpcsResult, write_result

D_TRUE = 3.0e5  # A^2/s
N_Q = 6


def _delays() -> np.ndarray:
    frames = list(range(1, 9))
    spacing = 2
    while len(frames) < 56:
        for _ in range(4):
            frames.append(frames[-1] + spacing)
        spacing *= 2
    return np.array(frames)


def _write(path: Path, seed: int = 0, stretch: dict | None = None) -> Path:
    """Brownian single exponentials; ``stretch`` {bin: beta} makes bins Kohlrausch
    decays (beta 0 for no decay at all)."""
    rng = np.random.default_rng(seed)
    frames = _delays()
    dt = 1e-5
    tau = frames * dt
    q = np.linspace(0.004, 0.012, N_Q)
    taus = 1.0 / (D_TRUE * q**2)
    beta = np.ones(N_Q)
    for b, v in (stretch or {}).items():
        beta[b] = v
    g2 = 1.0 + 0.2 * (beta > 0) * np.exp(-2.0 * (tau[:, None] / taus[None, :]) ** beta)
    err = np.full_like(g2, 0.002)
    g2 = g2 + err * rng.standard_normal(g2.shape)
    return write_g2_file(path, frames, dt, q, g2, err)


def write_g2_file(path: Path, frames: np.ndarray, dt: float, q: np.ndarray,
                  g2: np.ndarray, err: np.ndarray) -> Path:
    """A result file holding these multi-tau curves (T, len(q)), one q-bin per column
    of an 8-row map."""
    n_q = q.size
    dyn = np.tile(np.arange(1, n_q + 1), (8, 1))
    qm = QMap(
        dynamic_roi_map=dyn, static_roi_map=dyn.copy(), mask=np.ones(dyn.shape, bool),
        dynamic_v_list_dim0=q, dynamic_v_list_dim1=np.array([0.0]),
        static_v_list_dim0=q, static_v_list_dim1=np.array([0.0]),
        dynamic_index_mapping=np.arange(n_q), static_index_mapping=np.arange(n_q),
        dynamic_num_pts=(n_q, 1), static_num_pts=(n_q, 1), energy_kev=10.0,
    )
    mt = Multitau(delay_frames=frames, tau=frames * dt, g2=g2, g2_err=err,
                  valid=np.ones_like(g2, bool), t0_eff=dt)
    res = XpcsResult(
        path=path, analysis_type=("Multitau",), layout="nexus", qmap=qm, frame_time=dt,
        count_time=dt, start_time=None, saxs_1d=np.ones(n_q), saxs_1d_segments=None,
        intensity_vs_time=None, multitau=mt,
    )
    return write_result(path, res)


@pytest.fixture
def two_files(tmp_path):
    return [_write(tmp_path / "a_results.hdf", 0), _write(tmp_path / "b_results.hdf", 1)]


def test_fit_json_keys_and_known_answer(two_files, tmp_path):
    out = tmp_path / "fit.json"
    rc = main(["fit", *map(str, two_files), "-o", str(out), "--quiet", "--backend", "numpy"])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert len(doc["files"]) == 2
    for rec in doc["files"]:
        # the default is the automatic choice; single exponentials stay single
        assert rec["model"] == "auto" and rec["models"] == ["single"] * N_Q
        assert len(rec["q"]) == N_Q and len(rec["phi"]) == N_Q
        for n in ("contrast", "tau", "stretch", "baseline"):
            assert len(rec[n]["value"]) == N_Q and len(rec[n]["error"]) == N_Q
        assert rec["tau2"]["value"] == [None] * N_Q  # not the chosen model's parameter
        assert rec["status"] == ["converged"] * N_Q
        assert rec["status_detail"] == [""] * N_Q
        assert rec["error_scaling"].startswith("covariance errors x sqrt(chi2_red)")
        # the profile interval brackets tau; the mean relaxation time is tau
        tau, lo, hi = (np.array(rec["tau"][k]) for k in ("value", "lo", "hi"))
        assert np.all((lo < tau) & (tau < hi))
        assert np.all(np.array(rec["tau"]["lo2"]) < lo) and np.all(np.array(rec["tau"]["hi2"]) > hi)
        np.testing.assert_allclose(rec["tau_mean"]["value"], tau)
        assert all(abs(z) <= 3 for z in rec["runs_z"])
        assert set(rec["aicc"]) == {"single", "single_avgcorr", "stretched", "double"}
        assert all(d > -10 for d in rec["delta_aicc"])
        assert "runs |z| > 3" in rec["rules"]
        d = rec["diffusion"]
        assert set(d) >= {"D", "D_err", "exponent", "exponent_err", "verdict", "message"}
        assert d["verdict"] == "diffusive"
        assert abs(d["D"] - D_TRUE) < 4 * d["D_err"]
        assert abs(d["exponent"] + 2) < 4 * d["exponent_err"]
        # the test files state no solvent: no radius is made up
        assert d["radius_nm"] is None and "--temperature" in d["radius_note"]


def test_radius_only_with_a_stated_solvent(two_files, tmp_path):
    out = tmp_path / "fit.json"
    assert main(["fit", str(two_files[0]), "--temperature", "298.15", "--viscosity", "8.9e-4",
                 "-o", str(out), "--quiet"]) == 0
    d = json.loads(out.read_text())["files"][0]["diffusion"]
    kt = 1.380649e-23 * 298.15
    assert d["radius_nm"] == pytest.approx(kt / (6 * np.pi * 8.9e-4 * d["D"] * 1e-20) * 1e9)
    assert d["solvent"]["source"] == "command line"
    assert main(["fit", str(two_files[0]), "--temperature", "298", "-o", str(out), "--quiet"]) == 2


def test_noise_file_reports_no_d(tmp_path):
    path = _write(tmp_path / "noise_results.hdf", 3)
    import h5py as _h5

    with _h5.File(path, "r+") as f:
        g = f["/xpcs/multitau/normalized_g2"]
        rng = np.random.default_rng(9)
        g[...] = 1.0 + 0.002 * rng.standard_normal(g.shape)
    out = tmp_path / "fit.json"
    assert main(["fit", str(path), "-o", str(out), "--quiet"]) == 0
    rec = json.loads(out.read_text())["files"][0]
    assert "converged" not in rec["status"]
    assert rec["diffusion"]["verdict"] == "too_few_bins" and rec["diffusion"]["D"] is None
    assert all(v is None for v in rec["tau"]["value"])  # no decay, no tau


def test_unreadable_file_exit_3_others_fitted(two_files, tmp_path, capsys):
    bad = tmp_path / "broken.hdf"
    bad.write_bytes(b"not hdf5")
    out = tmp_path / "fit.json"
    rc = main(["fit", str(bad), str(two_files[0]), "-o", str(out), "--quiet"])
    assert rc == 3
    err = capsys.readouterr().err
    assert "broken.hdf" in err and "Traceback" not in err
    doc = json.loads(out.read_text())
    assert [Path(r["path"]).name for r in doc["files"]] == ["a_results.hdf"]
    assert doc["errors"][0]["path"] == str(bad)


def test_q_and_t_range_and_csv(two_files, tmp_path):
    out = tmp_path / "fit.csv"
    rc = main(["fit", str(two_files[0]), "--q-range", "0.005", "0.011", "--t-range", "1e-5", "1",
               "--model", "stretched", "-o", str(out), "--quiet"])
    assert rc == 0
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    assert header[:8] == ["path", "model", "bin", "q", "phi", "status", "status_detail",
                          "chi2_red"]
    assert "stretch_err" in header and "D" in header
    assert {"runs_z", "delta_aicc", "tau_lo", "tau_hi", "tau_mean"} <= set(header)
    assert {r.split(",")[1] for r in lines[1:]} == {"stretched"}
    qs = [float(r.split(",")[3]) for r in lines[1:]]
    assert len(qs) == 4 and min(qs) >= 0.005 and max(qs) <= 0.011


def test_hdf5_output_and_input_untouched(two_files, tmp_path):
    before = two_files[0].read_bytes()
    out = tmp_path / "fit.h5"
    assert main(["fit", str(two_files[0]), "-o", str(out), "--quiet"]) == 0
    assert two_files[0].read_bytes() == before
    with h5py.File(out, "r") as f:
        g = f["fits/0000"]
        assert g.attrs["model"] == "auto"
        assert list(g["models"].asstr()[()]) == ["single"] * N_Q
        assert g["tau/value"].shape == (N_Q,) and g["tau/lo"].shape == (N_Q,)
        assert g["aicc/double"].shape == (N_Q,)
        assert np.isfinite(g["diffusion"].attrs["D"])
        assert g["diffusion"].attrs["verdict"] == "diffusive"
        assert list(g["status_detail"].asstr()[()]) == [""] * N_Q


def test_refuses_to_write_into_input(two_files):
    rc = main(["fit", str(two_files[0]), "-o", str(two_files[0].with_suffix(".h5")), "--quiet"])
    assert rc == 0  # a different file is fine
    from xpcsviewer.fitting.results import save_fit_hdf5

    with pytest.raises(ValueError, match="input file"):
        save_fit_hdf5(two_files[0], [{"path": str(two_files[0])}])


def test_fit_without_output_prints_a_table(two_files, tmp_path, capsys):
    before = sorted(tmp_path.iterdir())
    capsys.readouterr()
    rc = main(["fit", *map(str, two_files), "--q-range", "0.005", "0.011", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0  # was a usage error (-o required)
    assert sorted(tmp_path.iterdir()) == before  # nothing written
    lines = out.splitlines()
    # the automatic choice names each row's model (single for these curves)
    assert lines[0].split() == ["file", "bin", "q_1/A", "status", "model", "tau_s",
                                "contrast", "chi2_red", "reason"]
    rows = [ln.split() for ln in lines[1:] if not ln.startswith("note:")]
    assert len(rows) == 2 * 4
    # the file's own bin numbers (q-range 0.005..0.011 keeps bins 2..5 of 6)
    assert [r[1] for r in rows] == ["2", "3", "4", "5"] * 2
    q = np.linspace(0.004, 0.012, N_Q)
    for r in rows:
        assert r[0] in ("a_results.hdf", "b_results.hdf") and r[3] == "converged"
        assert r[4] == "single"
        assert float(r[2]) == pytest.approx(q[int(r[1]) - 1], rel=1e-3)
        tau, pm, err = float(r[5]), r[6], float(r[7])
        assert pm == "\u00b1" and 0 < err < tau
        assert tau == pytest.approx(1 / (D_TRUE * float(r[2]) ** 2), rel=0.1)


def test_fit_options_have_help():
    from xpcsviewer.cli import build_parser

    parser = build_parser()
    fit = next(a for a in parser._subparsers._group_actions[0].choices.items()
               if a[0] == "fit")[1]
    helps = {a.dest: a.help or "" for a in fit._actions}
    assert all(m in helps["model"] for m in ("single", "stretched", "double"))
    assert "1/\u00c5" in helps["q_range"] and "in s" in helps["t_range"]
    assert "table" in helps["output"]


def test_fit_progress_moves_within_files(two_files, tmp_path, monkeypatch):
    """Progress in units per file: reading and the solve move the bar, and with --bayes
    the sampling does, shared among the files by their bins; never backwards."""
    from xpcsviewer.batch import file_items
    from xpcsviewer.jobs.fit import UNITS, FitOptions, fit_files

    def run(opts, items):
        seen = []
        outs = fit_files(opts, items, progress=lambda d, t, m="": seen.append((d, t, m)))
        return seen, outs

    items = file_items(two_files)
    seen, outs = run(FitOptions(), items)
    assert all(o.ok for o in outs)
    done = [d for d, _, _ in seen]
    assert done == sorted(done) and done[-1] == seen[-1][1] == 2 * UNITS
    assert 0 < done[0] < UNITS  # the first file read already moves it

    # a stand-in sampler: reports 4 blocks, then fails (the bar must still not go back)
    import xpcsviewer.fitting.bayes as bayes_mod

    def fake(tau, g2, *a, progress=None, **kw):
        for k in range(5):
            progress(k, 4, f"sampling {k}/4")
        raise RuntimeError("stand-in sampler")

    monkeypatch.setattr(bayes_mod, "fit_g2_bayes", fake)
    items = file_items([two_files[0], _write(tmp_path / "c_results.hdf", 2)])
    seen, outs = run(FitOptions(bayes=True, q_range=(0.0, 0.0065)), items)
    done = [d for d, _, _ in seen]
    assert done == sorted(done) and done[-1] == seen[-1][1] == 2 * UNITS
    assert [o.ok for o in outs] == [False, False] and "stand-in sampler" in outs[0].error
    spans = []
    for name in ("a_results.hdf", "c_results.hdf"):
        # the text says how many bins are sampled (issue 32: it said all, sampled or not)
        at = [d for d, _, m in seen if m.startswith(f"{name}: sampling 2 of 2 bins x 4 chains"
                                                    " x 1500 draws") and "/4" in m]
        assert len(at) == 5 and at == sorted(set(at))  # every block moves the bar
        spans.append((at[0], at[-1]))
    # sampling is 95 % of the work, shared by bins (2 and 2 here)
    assert spans[0][1] <= spans[1][0]
    assert spans[0][1] - spans[0][0] == pytest.approx(0.95 * UNITS, abs=2)
    assert spans[1][1] - spans[1][0] == pytest.approx(0.95 * UNITS, abs=2)


@pytest.mark.slow
def test_fit_bayes_json(tmp_path, capsys):
    # Issue 23: --bayes follows the automatic model choice (the default) and samples
    # only the bins least squares finds decaying: bin 2 a Kohlrausch decay (beta 0.5),
    # bin 4 flat
    path = _write(tmp_path / "a_results.hdf", 0, stretch={2: 0.5, 4: 0.0})
    out = tmp_path / "fit.json"
    assert main(["fit", str(path), "--bayes", "--model", "auto", "-o", str(out)]) == 0
    # the bar moves while the one file is sampled (it sat at 0 % until the file was done)
    bar = capsys.readouterr().err.split("\r")
    pct = [float(x.split("]")[1].split("%")[0]) for x in bar if x.startswith("fit [")
           and "chains" in x]
    assert len({p for p in pct if 5 < p < 95}) >= 3
    assert pct == sorted(pct)  # the extension round does not send the bar back (issue 32)
    assert "Bayesian: 5 of 6 bins sampled" in "".join(bar)
    rec = json.loads(out.read_text())["files"][0]
    assert rec["model"] == "auto"
    assert rec["models"] == ["single", "single", "stretched", "single", "single", "single"]
    assert rec["sampled"] == [True, True, True, True, False, True]
    assert rec["status"][4] == rec["status_lsq"][4] == "no_decay"
    assert rec["status_detail"][4].startswith("not sampled: ")
    assert rec["divergences"][4] is None and rec["tau"]["r_hat"][4] is None
    assert rec["stretch"]["std"][2] > 0 and rec["stretch"]["std"][0] == 0
    assert abs(rec["stretch"]["mean"][2] - 0.5) < 4 * rec["stretch"]["std"][2]
    for k in ("mean", "std", "hdi_low", "hdi_high", "r_hat", "ess_bulk", "ess_tail"):
        assert len(rec["tau"][k]) == N_Q
    on = [b for b in range(N_Q) if rec["sampled"][b]]
    assert [rec["divergences"][b] for b in on] == [0] * len(on)
    assert all(rec["tau"]["r_hat"][b] <= 1.01 for b in on)
    assert [rec["status"][b] for b in on] == ["converged"] * len(on)
    # the ESS gate of the CLI's 4 chains, and how long each bin was sampled
    assert rec["bayes"]["ess_min"] == 400 and len(rec["draws_per_chain"]) == N_Q
    assert all(rec["draws_per_chain"][b] >= rec["bayes"]["num_samples"] for b in on)
    lo, hi, v = (np.array(rec["tau"][k], float)[on] for k in ("hdi_low", "hdi_high", "value"))
    assert np.all((lo <= v) & (v <= hi))


def test_real_files_fit_honest_statuses(real_data_dir, tmp_path):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*.hdf"))
    assert len(files) == 11
    out = tmp_path / "real.json"
    assert main(["fit", *map(str, files), "-o", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    allowed = {"converged", "no_decay", "errors_understated", "unresolved", "misfit",
               "poor_fit", "at_bound", "failed"}
    # the late B0147 files decay slowly (tau ~ 1-2 s): most of those bins have not
    # reached a plateau by the last delay (unresolved, with a limit), are two-step decays
    # or their tau moves with the last delays; ~12 over the set hold
    n_conv = sum(rec["status"].count("converged") for rec in doc["files"])
    assert n_conv >= 8
    for rec in doc["files"]:
        assert set(rec["status"]) <= allowed
        assert rec["suspect_points_excluded"] > 0  # the lone last delay, at least
        tm = np.array([np.nan if v is None else v for v in rec["tau_mean"]["value"]])
        for i, s in enumerate(rec["status"]):
            if s in ("no_decay", "errors_understated"):
                assert np.isnan(tm[i])  # no tau without a decay
                # issue 48: no_decay only where the errors describe the scatter
                assert (s == "no_decay") == (rec["chi2_red"][i] <= 25)
            if s not in ("converged", "at_bound"):
                assert rec["tau_mean"]["value"][i] is None  # a value only where claimed
            if s == "converged":
                assert 1e-6 < tm[i] < 100
                assert abs(rec["runs_z"][i]) <= 3 and rec["decay_left"][i] <= 0.05
            if rec["tau_lower_limit"][i] is not None:
                name = rec["limit_param"][i]
                assert s == "unresolved" and rec[name]["value"][i] is None
        d = rec["diffusion"]
        # nothing in this ageing series or its buffer is Brownian diffusion
        assert d["verdict"] in ("not_diffusive", "too_few_bins") and d["D"] is None
        assert "radius_nm" not in d


def test_bayes_table_shows_the_posterior():
    # issue 32: `fit --bayes` printed the least-squares table; now the posterior values
    # where a bin was sampled, with r-hat, ESS and divergences
    from xpcsviewer.commands.fit import fit_table

    def entry(v, e, mean, std):
        return {"value": v, "error": e, "mean": mean, "std": std}

    rec = {
        "path": "x_results.hdf", "model": "single", "models": ["single", "single"],
        "q": [0.001, 0.002], "phi": [0.0, 0.0], "bins": [1, 2],
        "status": ["converged", "no_decay"], "chi2_red": [1.1, 0.9],
        "tau_lower_limit": [None, None], "tau_upper_limit": [None, None],
        "tau": entry([1.0e-3, None], [1e-5, None], [1.2e-3, None], [2e-5, None]),
        "contrast": entry([0.2, 0.001], [0.01, 0.002], [0.21, None], [0.011, None]),
        "sampled": [True, False], "r_hat_max": [1.002, None], "ess_min": [812.0, None],
        "divergences": [0, None], "bayes": {"num_chains": 4},
    }
    head, row1, row2 = (line.split() for line in fit_table([rec])[:3])
    assert head[-5:] == ["sampled", "r_hat", "ess", "div", "reason"]
    assert "0.0012" in row1 and "0.001" not in row1[4:6]  # the posterior mean, not the LSQ
    assert row1[-4:] == ["yes", "1.002", "812", "0"]
    assert row2[-4:] == ["no", "-", "-", "-"]


def test_progress_text_keeps_its_end():
    from xpcsviewer.progress import _fit_text

    msg = "0/1 files done; " + "a" * 150 + ": 6 bins short of ESS 400: 1000 more draws per chain"
    out = _fit_text(msg, 120)
    assert len(out) == 120 and out.endswith("ESS 400: 1000 more draws per chain")
