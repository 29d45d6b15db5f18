"""Real-data regression: our fits against a careful SciPy analysis, bin by bin.

Over the 11 production files in ../shared/data/real (skipped without them) and the
simulated demo set. The
reference is computed here, independently of our code: ``curve_fit`` of the single
exponential with sigma = the stored errors, the same points (the reader's valid mask
without the suspect-error points, errors <= 1e-6 left out) and the same bounds, from 13
start values of tau; the lowest chi2 is kept; errors from the covariance with the
stated sigma, scaled by sqrt(chi2_red) where it exceeds 1 (``absolute_sigma=False``
would also shrink them where the scatter is below the stated errors). A bin is
*credible* when, as a referee would check it:

- tau's relative error < 50 %, 0 < contrast < 1 at > 3 sigma and t_min <= tau <= 10
  t_max (the earlier criteria; chi2_red < 25 was one until issue 32: with the white
  residuals required below, a larger chi2_red is errors stated too small, scaled);
- the residuals have no structure: a Wald-Wolfowitz runs test, counted here in a plain
  loop, |z| <= 3;
- the decay reaches a plateau: exp(-2 t_last / tau) <= 5 % at the last fitted delay;
- tau holds: the same multi-start fit without the last 2 fitted delays lies inside
  the 2-sigma interval of a chi^2 profile made here (a fine tau grid, contrast and
  baseline by weighted linear least squares, Delta chi^2 = 4 x max(1, chi2_red)), and
  (issue 32: both ways) the whole window's tau lies inside the shorter fit's own
  2-sigma profile interval;
- the first delays are not off the fit together (issue 32): the sum of the first k
  residuals / sqrt(k), scaled by sqrt(max(1, chi2_red)), stays within 4 over the first
  half of the points (counted here in a plain loop).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.optimize import curve_fit

from xpcsviewer.fitting import default_params, evaluate_model, fit_g2
from xpcsviewer.io import read_result

pytestmark = pytest.mark.slow


def _model(t, c, tau, b):
    return b + c * np.exp(-2.0 * t / tau)


def _jac(t, c, tau, b):
    e = np.exp(-2.0 * t / tau)
    return np.stack([e, c * e * 2.0 * t / tau**2, np.ones_like(t)], axis=1)


def _bounds(t, y):
    sp = default_params("single", t, y)
    lo = [sp["contrast"].lower, sp["tau"].lower, sp["baseline"].lower]
    hi = [sp["contrast"].upper, sp["tau"].upper, sp["baseline"].upper]
    return lo, hi


def _reference(t, y, s, bounds=None):
    lo, hi = bounds if bounds is not None else _bounds(t, y)
    b0 = float(np.clip(np.median(y[-3:]), lo[2], hi[2]))
    c0 = float(np.clip(np.median(y[:3]) - b0, 1e-3, 0.999 * hi[0]))
    best = None
    for t0 in np.geomspace(lo[1] * 1.01, hi[1] * 0.99, 13):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p, cov = curve_fit(_model, t, y, p0=[c0, t0, b0], sigma=s, jac=_jac,
                                   bounds=(lo, hi), absolute_sigma=True, maxfev=5000)
        except (RuntimeError, ValueError):
            continue
        chi2 = float(np.sum(((_model(t, *p) - y) / s) ** 2))
        if best is None or chi2 < best["chi2"]:
            best = {"chi2": chi2, "p": p, "e": np.sqrt(np.diag(cov))}
    if best is None:
        return None
    dof = t.size - 3
    best["chi2_red"] = best["chi2"] / dof
    best["e"] = best["e"] * math.sqrt(max(1.0, best["chi2_red"]))
    c, tau, _ = best["p"]
    ce, te, _ = best["e"]
    best["credible"] = bool(
        te / tau < 0.5 and 0 < c < 1 and c > 3 * ce
        and t.min() <= tau <= 10 * t.max()
    )
    return best


def runs_z(r):
    """Wald-Wolfowitz z of the signs of ``r`` (in order), counted in a plain loop."""
    s = [1 if v > 0 else -1 for v in r if v != 0]
    n1, n2 = s.count(1), s.count(-1)
    if n1 == 0 or n2 == 0:
        return -math.inf
    runs = 1 + sum(1 for a, b in itertools.pairwise(s) if a != b)
    n = n1 + n2
    mu = 2 * n1 * n2 / n + 1
    return (runs - mu) / math.sqrt((mu - 1) * (mu - 2) / (n - 1))


def _profile_2sigma(t, y, s, tau_hat, scale, lo, hi):
    grid = np.geomspace(lo, hi, 3001)
    w = 1.0 / s
    chi2 = np.empty(grid.size)
    for i, tau in enumerate(grid):
        a = np.stack([np.exp(-2 * t / tau), np.ones_like(t)], 1) * w[:, None]
        coef, *_ = np.linalg.lstsq(a, y * w, rcond=None)
        chi2[i] = np.sum((a @ coef - y * w) ** 2)
    d = (chi2 - chi2.min()) / scale
    i0 = int(np.argmin(np.abs(np.log(grid / tau_hat))))
    out = []
    for step in (-1, 1):
        i = i0
        while 0 <= i + step < grid.size and d[i + step] < 4.0:
            i += step
        out.append(grid[i + step] if 0 <= i + step < grid.size else np.nan)
    return out


def early_excess(r):
    """max over k = 3 .. n // 2 of |r_1 + ... + r_k| / sqrt(k), in a plain loop."""
    best, acc = 0.0, 0.0
    for k in range(1, max(len(r) // 2, 3) + 1):
        acc += r[k - 1]
        if k >= 3:
            best = max(best, abs(acc) / math.sqrt(k))
    return best


def careful(t, y, s):
    """The referee's analysis of one curve: the SciPy fit and its credibility."""
    bounds = _bounds(t, y)
    ref = _reference(t, y, s, bounds)
    if ref is None:
        return None
    c, tau, b = ref["p"]
    ref["runs_z"] = runs_z((y - _model(t, c, tau, b)) / s)
    ref["left"] = math.exp(-2 * t.max() / tau)
    ref["stable"] = False
    r = (y - _model(t, c, tau, b)) / s / math.sqrt(max(1.0, ref["chi2_red"]))
    ref["early"] = early_excess(r) if len(r) >= 10 else 0.0
    if ref["credible"] and abs(ref["runs_z"]) <= 3 and ref["left"] <= 0.05:
        short = _reference(t[:-2], y[:-2], s[:-2], bounds)
        lo2, hi2 = _profile_2sigma(t, y, s, tau, max(1.0, ref["chi2_red"]),
                                   bounds[0][1], bounds[1][1])
        if short is not None:
            ts = short["p"][1]
            lo2s, hi2s = _profile_2sigma(t[:-2], y[:-2], s[:-2], ts,
                                         max(1.0, short["chi2_red"]), bounds[0][1],
                                         bounds[1][1])
            ref["stable"] = bool((np.isnan(lo2) or ts >= lo2) and (np.isnan(hi2) or ts <= hi2)
                                 and (np.isnan(lo2s) or tau >= lo2s)
                                 and (np.isnan(hi2s) or tau <= hi2s))
    ref["credible"] = bool(ref["credible"] and abs(ref["runs_z"]) <= 3 and ref["left"] <= 0.05
                           and ref["stable"] and ref["early"] <= 4.0)
    return ref


def _read(paths):
    data = []
    for f in paths:
        mt = read_result(f).multitau
        if mt is not None:
            data.append((f.name, mt.tau, mt.g2.T, mt.g2_err.T, mt.fit_mask.T))
    return data


def _data(real_data_dir):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*_results.hdf"))
    assert len(files) == 11
    return _read(files)


def _stack(data):
    # every curve of every file as (B, T) rows, padded with invalid points
    n_t = max(d[1].size for d in data)

    def pad(a, fill):
        return np.pad(a, ((0, 0), (0, n_t - a.shape[1])), constant_values=fill)

    tau = np.concatenate([pad(np.broadcast_to(d[1], d[2].shape), 1.0) for d in data])
    return (tau, np.concatenate([pad(d[2], 0.0) for d in data]),
            np.concatenate([pad(d[3], 0.0) for d in data]),
            np.concatenate([pad(d[4], False) for d in data]))


def _fits(data):
    refs = []
    for _name, tau, g2, err, mask in data:
        for b in range(g2.shape[0]):
            m = mask[b] & (err[b] > 1e-6)
            refs.append(careful(tau[m], g2[b, m], err[b, m]) if m.sum() > 3 else None)
    stacked = _stack(data)
    return data, refs, fit_g2(*stacked, model="single"), fit_g2(*stacked, model="auto")


@pytest.fixture(scope="module")
def real_fits(real_data_dir):
    return _fits(_data(real_data_dir))


@pytest.fixture(scope="module")
def demo_fits(demo_set_dir):
    # the frame-simulated demo files; the photon-sparse ones (S0*, issue 30) are few photons
    # per pixel: on S01 the automatic model prefers a double exponential for one bin the
    # careful analysis calls a credible single (refused, not wrong: issue 32's to judge)
    # The R0* acquisitions carry planted detector faults (issue 45: hot pixels left in,
    # a bright spot at the cap, a modulation): their bins are disturbed on purpose.
    return _fits(_read(sorted(p for p in demo_set_dir.glob("*_results.hdf")
                              if not p.name.startswith(("S0", "R0")))))


def _our_runs_z(fit, i, tau, y, err, m):
    from xpcsviewer.fitting import model_param_names

    p = tuple(fit.params[n][i] for n in model_param_names(fit.model_of(i)))
    r = (y[m] - evaluate_model(fit.model_of(i), tau[m], p)) / err[m]
    return runs_z(r)


def _compare(fits):
    """Per-file counts of our statuses against the careful analysis."""
    data, refs, single, auto = fits
    row = 0
    table = {}
    keys = ("credible", "recovered", "refused", "wrong", "junk_converged", "other_model",
            "converged_structured")
    for name, tau, g2, err, mask in data:
        counts = dict.fromkeys(keys, 0)
        for b in range(g2.shape[0]):
            i = row + b
            ref = refs[i]
            m = mask[b] & (err[b] > 1e-6)
            st = single.status[i].value
            if ref is None:
                assert st == "failed"
                continue
            # never a worse optimum than the careful analysis (same model, mask, bounds);
            # 1e-5: one flat no-decay demo curve stops at 200 iterations 1.6e-6 above
            chi2 = single.chi2_red[i] * (single.n_points[i] - 3)
            assert chi2 <= ref["chi2"] * (1 + 1e-5) + 1e-6, (name, b, chi2, ref["chi2"])
            for fit in (single, auto):
                if fit.status[i].value == "converged":
                    z = _our_runs_z(fit, i, tau, g2[b], err[b], m)
                    counts["converged_structured"] += abs(z) > 3
            a_st, a_model = auto.status[i].value, auto.model_of(i).value
            if ref["credible"]:
                counts["credible"] += 1
                if st != "converged" or a_st != "converged":
                    counts["refused"] += 1
                elif abs(single.params["tau"][i] / ref["p"][1] - 1) > 0.01 or (
                        a_model == "single"
                        and abs(auto.params["tau"][i] / ref["p"][1] - 1) > 0.01):
                    counts["wrong"] += 1
                else:
                    counts["recovered"] += 1
            elif st == "converged" or (a_st == "converged" and a_model == "single"):
                counts["junk_converged"] += 1
            if a_st == "converged" and a_model != "single":
                counts["other_model"] += 1
        row += g2.shape[0]
        table[name] = counts
    print("\nfile: " + " ".join(keys))
    for name, c in table.items():
        print(name[-32:], c)
    total = {k: sum(c[k] for c in table.values()) for k in keys}
    print("total", total)
    return total


@pytest.mark.realdata
def test_real_bins_match_the_careful_analysis(real_fits):
    total = _compare(real_fits)
    assert total["credible"] >= 8  # the bins whose decay ends inside the window
    assert total["refused"] == 0 and total["wrong"] == 0, total
    assert total["junk_converged"] == 0, total
    assert total["converged_structured"] == 0, total


def test_demo_bins_match_the_careful_analysis(demo_fits):
    # the simulated demo: mostly single exponentials whose decay ends in the window
    total = _compare(demo_fits)
    assert total["credible"] >= 80
    assert total["refused"] == 0 and total["wrong"] == 0, total
    assert total["junk_converged"] == 0, total
    assert total["converged_structured"] == 0, total


def _window_held(fits):
    # converged tau refitted without the last 2 fitted delays (a fresh fit of the
    # chosen model) inside their stated 2-sigma interval: (held, total) per fit
    from xpcsviewer.fitting.profile import drop_last

    data, _refs, single, auto = fits
    tau, g2, err, mask = _stack(data)
    short = drop_last(mask & (err > 1e-6), 2)
    out = []
    for fit in (single, auto):
        held = total = 0
        for model in set(fit.model_names()[fit.ok]):
            rows = np.flatnonzero(fit.ok & (fit.model_names() == model))
            again = fit_g2(tau[rows], g2[rows], err[rows], short[rows], model=model)
            for k, r in enumerate(rows):
                for n, iv in fit.interval2.items():
                    if np.isfinite(fit.params[n][r]):
                        lo, hi = iv[r]
                        v = again.params[n][k]
                        total += 1
                        held += bool((np.isnan(lo) or v >= lo) and (np.isnan(hi) or v <= hi))
        out.append((held, total))
    return out


@pytest.mark.realdata
def test_real_converged_tau_holds_without_the_last_two_delays(real_fits):
    for held, total in _window_held(real_fits):
        assert total >= 8 and held >= 0.95 * total, (held, total)


def test_demo_converged_tau_holds_without_the_last_two_delays(demo_fits):
    for held, total in _window_held(demo_fits):
        assert total >= 80 and held >= 0.95 * total, (held, total)


@pytest.mark.realdata
def test_real_statuses_do_not_depend_on_the_batch(real_fits):
    data, _refs, single, auto = real_fits
    row = 0
    for _name, tau, g2, err, mask in data:
        n = g2.shape[0]
        for model, batch in (("single", single), ("auto", auto)):
            alone = fit_g2(tau, g2, err, mask, model=model)
            assert [s.value for s in alone.status] == [s.value for s in batch.status[row:row + n]]
            assert list(alone.model_names()) == list(batch.model_names()[row:row + n])
            ok = np.isfinite(alone.tau_mean)
            np.testing.assert_allclose(alone.tau_mean[ok], batch.tau_mean[row:row + n][ok],
                                       rtol=1e-4)
        row += n


@pytest.mark.realdata
def test_real_last_delay_is_left_out(real_data_dir):
    # The lone last multi-tau point states an error 0.26-0.8x its neighbour's although it
    # has the fewest frame pairs; below 0.5x (the stated rule) it is left out: measured
    # 263 of 293 bins, and 100 % in the five earliest files where the ratio is ~0.27.
    n_has = n_out = 0
    for _name, _tau, g2, err, mask in _data(real_data_dir):
        has = np.isfinite(g2[:, -1]) & (g2[:, -1] != 0) & (err[:, -1] > 0)
        n_has += int(has.sum())
        n_out += int((has & ~mask[:, -1]).sum())
        prev = err[:, -2]
        out = has & ~mask[:, -1]
        assert np.all(err[out, -1] < 0.5 * prev[out] + 1e-12)
    assert n_out >= 0.85 * n_has, (n_out, n_has)


@pytest.mark.realdata
def test_real_issue_examples_with_the_suspect_last_point(real_data_dir):
    # Average_B0147 ...01151_01250 with the lone last delay fitted (its stated error is
    # 0.26-0.8x its neighbour's): bin 10 went 0.077 +- 0.025 s -> 0.485 +- 0.16 s and
    # bin 8 0.47 +- 0.09 s -> 2.74 +- 1.2 s, both "converged" before.
    f = next((real_data_dir / "aps8idi_llps_saxpcs").glob("*01151_01250_results.hdf"))
    mt = read_result(f).multitau
    out = fit_g2(mt.tau, mt.g2.T, mt.g2_err.T, mt.fit_mask.T)
    both = fit_g2(mt.tau, mt.g2.T, mt.g2_err.T, mt.valid.T)
    assert out.status[10].value == "converged"
    assert out.params["tau"][10] == pytest.approx(0.0765, rel=0.01)
    assert out.status[8].value == "converged"
    assert out.params["tau"][8] == pytest.approx(0.47, rel=0.01)
    # bin 10: the profile's short side reaches a factor ~3 (the curvature error said 33 %)
    assert both.params["tau"][10] == pytest.approx(0.485, rel=0.01)
    # (issue 32: the two-sided window check now says it first: 0.49 -> 0.073 s)
    assert both.status[10].value == "unresolved" and (
        "known only to a factor" in both.detail[10] or "last delays" in both.detail[10])
    lo, hi = both.interval["tau"][10]
    assert both.params["tau"][10] / lo > 2.5 and hi / both.params["tau"][10] < 2.1
    # bin 8: 30 % of the decay left at the last delay: a lower limit only
    assert both.status[8].value == "unresolved" and "no plateau" in both.detail[8]
    # the 95 % lower limit (1.42 s) sits below the fitted 2.74 s, which is not quoted
    assert both.tau_lower_limit[8] == pytest.approx(1.42, rel=0.02)
    assert both.tau_lower_limit[8] < both.params["tau"][8]
    assert np.isnan(both.tau_upper_limit[8]) and both.limit_name[8] == "tau"
    assert np.isnan(both.reported("tau")[0][8])
    assert "tau > 1.42 s (95 %)" in both.detail[8]


def _nuts_on_converged(fits, per_file=None):
    """NUTS (the g2 tab's chains, shorter runs) on the bins the automatic least squares
    calls converged, each with its chosen model: (divergences, draws, worst r-hat)."""
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

    data, _refs, _single, auto = fits
    groups: dict[bytes, list] = {}
    row = 0
    for _name, tau, g2, err, mask in data:
        n = g2.shape[0]
        ok = np.flatnonzero(auto.ok[row:row + n])[:per_file]
        if ok.size:
            groups.setdefault(tau.tobytes(), []).append((tau, g2[ok], err[ok], mask[ok], row + ok))
        row += n
    div = draws = 0
    r_hat = []
    for parts in groups.values():
        cat = [np.concatenate([p[k] for p in parts]) for k in (1, 2, 3, 4)]
        init = auto.select(cat[3])
        r = fit_g2_bayes(parts[0][0], *cat[:3], fit=FitSpec(model="auto"), init=init,
                         sampler=SamplerSpec(num_warmup=300, num_samples=500, num_chains=2,
                                             seed=0))
        assert r.sampled.all()
        div += int(r.divergences_per_bin.sum())
        draws += int(np.sum(r.draws_per_chain) * r.num_chains)
        r_hat += list(r.diagnostics()["r_hat"])
    print(f"\nNUTS on {len(r_hat)} converged bins: {div} divergences in {draws} draws, "
          f"r-hat max {max(r_hat):.4f}")
    return div, draws, max(r_hat)


@pytest.mark.realdata
def test_real_nuts_hardly_diverges_on_converged_bins(real_fits):
    # Issue 23: divergences on the bins least squares calls converged <= 1 % of draws
    # (measured: 0 of 11 bins x 4 chains x 1000 draws; before, all of the 17854 were
    # in bins least squares rejects, which are no longer sampled)
    div, draws, r_hat = _nuts_on_converged(real_fits)
    assert draws >= 11 * 2 * 500
    assert div <= 0.01 * draws and r_hat < 1.05


def test_demo_nuts_hardly_diverges_on_converged_bins(demo_fits):
    div, draws, r_hat = _nuts_on_converged(demo_fits, per_file=3)
    assert draws >= 30 * 2 * 500
    assert div <= 0.01 * draws and r_hat < 1.05


def _labels(fits):
    """Issue 48's counts on a fit set: no_decay over understated errors, limits on an
    undetermined stretched tau, and reasons that name a model the pinned fit calls a
    misfit."""
    from xpcsviewer.fitting.status import STRETCH_REL_ERR_MAX
    from xpcsviewer.fitting.vocabulary import MODEL_LABELS

    data, _refs, single, auto = fits
    tau, g2, err, mask = _stack(data)
    out = {"no_decay_understated": 0, "stretched_limits": 0, "named": 0, "named_misfit": 0}
    for fit in (single, auto):
        for i, s in enumerate(fit.status):
            if s.value == "no_decay" and fit.chi2_red[i] > 25:
                out["no_decay_understated"] += 1
            lim = np.isfinite(fit.tau_lower_limit[i]) or np.isfinite(fit.tau_upper_limit[i])
            if lim and fit.model_of(i).value == "stretched":
                rel = fit.errors["stretch"][i] / fit.params["stretch"][i]
                out["stretched_limits"] += not rel < STRETCH_REL_ERR_MAX
    label_of = {v: k for k, v in MODEL_LABELS.items()}
    named = {}
    # the reasons of auto's misfits and of the single exponential's with the other
    # models compared (as --model single names them)
    mis = np.flatnonzero([s.value == "misfit" for s in single.status])
    compared = fit_g2(tau[mis], g2[mis], err[mis], mask[mis], model="single", compare=True)
    reasons = [*enumerate(auto.detail), *zip(mis, compared.detail, strict=True)]
    for i, d in reasons:
        for label, m in label_of.items():
            if f"; {label} preferred" in str(d) or f"; {label} fits without structure" in str(d):
                named.setdefault(m, []).append(i)
    for m, rows in named.items():
        rows = np.array(rows)
        pinned = fit_g2(tau[rows], g2[rows], err[rows], mask[rows], model=m)
        out["named"] += rows.size
        out["named_misfit"] += sum(s.value == "misfit" for s in pinned.status)
    print("\nlabels", out)
    return out


@pytest.mark.realdata
def test_real_labels_can_be_taken_at_their_word(real_fits):
    out = _labels(real_fits)
    assert out["no_decay_understated"] == 0 and out["stretched_limits"] == 0, out
    assert out["named_misfit"] == 0, out


def test_demo_labels_can_be_taken_at_their_word(demo_fits):
    out = _labels(demo_fits)
    assert out["no_decay_understated"] == 0 and out["stretched_limits"] == 0, out
    assert out["named_misfit"] == 0, out


@pytest.mark.realdata
def test_real_converged_tau_holds_with_the_window_ending_at_0p98_s(real_fits):
    # issue 48: fitted again with the window ending at 0.98 s, the converged times of
    # both fits agree within 2 combined sigma in >= 95 % of the bins
    data, _refs, single, auto = real_fits
    tau, g2, err, mask = _stack(data)
    for model, whole in (("single", single), ("auto", auto)):
        short = fit_g2(tau, g2, err, mask & (tau <= 0.98), model=model)
        held = total = 0
        for i in range(len(whole.status)):
            if not (whole.ok[i] and short.ok[i] and whole.model_of(i) == short.model_of(i)):
                continue
            for n in ("tau", "tau1", "tau2"):
                a, b = whole.params.get(n), short.params.get(n)
                if a is None or not (np.isfinite(a[i]) and np.isfinite(b[i])):
                    continue
                total += 1
                held += abs(a[i] - b[i]) <= 2 * np.hypot(whole.errors[n][i], short.errors[n][i])
        assert total >= 8 and held >= 0.95 * total, (model, held, total)
