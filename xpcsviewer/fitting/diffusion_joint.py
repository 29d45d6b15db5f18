"""Joint fit: D and alpha directly from all g2 curves of one file,
g2_b(t) = baseline_b + contrast_b exp(-2 t D q_b^alpha).

Units: q in 1/Angstrom, t in s, D in Angstrom^alpha/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.lsq import FitStatus, G2FitResult, usable_errors
from xpcsviewer.fitting.models import estimate_starts

__all__ = ["JointDiffusionResult", "fit_diffusion_joint"]


@dataclass
class JointDiffusionResult:
    """tau(q) = 1 / (D q^alpha) fitted jointly to all g2 curves of one file.

    Attributes
    ----------
    D, D_err : float
        A^alpha/s (A^2/s for alpha = 2).
    alpha, alpha_err : float
    contrast, contrast_err, baseline, baseline_err : (Nq,) float64
        Per-bin nuisance parameters (NaN for bins left out).
    chi2_red : float
    status : FitStatus
    used_bins : (Nq,) bool
    n_iter : int
    """

    D: float
    D_err: float
    alpha: float
    alpha_err: float
    contrast: np.ndarray
    contrast_err: np.ndarray
    baseline: np.ndarray
    baseline_err: np.ndarray
    chi2_red: float
    status: FitStatus
    used_bins: np.ndarray
    n_iter: int
    alpha_fixed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def tau(self, q: Any) -> np.ndarray:
        """Model relaxation time at ``q`` (1/A) -> s."""
        return 1.0 / (self.D * np.asarray(q, dtype=np.float64) ** self.alpha)


def fit_diffusion_joint(
    q: Any,
    tau: Any,
    g2: Any,
    g2_err: Any,
    valid: Any | None = None,
    q_range: tuple[float, float] | None = None,
    t_range: tuple[float, float] | None = None,
    alpha: float | None = None,
    init: G2FitResult | None = None,
    max_iter: int = 300,
    bins: Any | None = None,
) -> JointDiffusionResult:
    """Fit D and alpha directly from all g2 curves of one file.

    g2_b(t) = baseline_b + contrast_b exp(-2 t D q_b^alpha), one (D, alpha) for all bins
    and a contrast and baseline per bin; projected LM (log D, alpha in [0.5, 4]) with
    an analytic Jacobian on the host.

    Parameters
    ----------
    q : (Nq,) 1/A
    tau : (T,) s
    g2, g2_err, valid : (Nq, T) (the transpose of the file's (T, Nq) layout)
    q_range, t_range : optional selections
    alpha : float, optional
        Fix alpha (2 for Brownian motion); None fits it.
    init : G2FitResult, optional
        Per-bin single fits for the starting contrast/baseline and D.
    bins : (Nq,) bool, optional
        Bins allowed in (e.g. those whose own fit converged); default all.

    Returns
    -------
    JointDiffusionResult
    """
    q = np.asarray(q, dtype=np.float64).ravel()
    tau = np.asarray(tau, dtype=np.float64).ravel()
    g2 = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    valid = np.ones(g2.shape, bool) if valid is None else np.atleast_2d(np.asarray(valid, bool))
    n_q, n_t = g2.shape
    if q.shape[0] != n_q:
        raise ValueError(f"q has {q.shape[0]} bins but g2 has {n_q} rows")
    mask = valid & np.isfinite(g2) & (tau > 0)[None, :]
    if t_range is not None:
        lo_t, hi_t = sorted(float(v) for v in t_range)
        mask &= ((tau >= lo_t) & (tau <= hi_t))[None, :]
    sigma_all, mask, _ = usable_errors(err, mask)
    use = np.isfinite(q) & (q > 0) & (mask.sum(1) >= 3)
    if bins is not None:
        use &= np.asarray(bins, dtype=bool).ravel()
    if q_range is not None:
        lo_q, hi_q = sorted(float(v) for v in q_range)
        use &= (q >= lo_q) & (q <= hi_q)
    idx = np.nonzero(use)[0]
    nan = float("nan")
    empty = np.full(n_q, np.nan)
    if idx.size < (1 if alpha is not None else 2):
        return JointDiffusionResult(nan, nan, nan, nan, empty, empty.copy(), empty.copy(),
                                    empty.copy(), nan, FitStatus.FAILED, use, 0,
                                    alpha is not None)
    nb = idx.size
    qs = q[idx]
    est = estimate_starts(tau, g2[idx], mask[idx])
    if init is not None and "tau" in init.params:
        def from_init(name):
            v = init.params[name][idx]
            return np.where(np.isfinite(v), v, est[name])

        t_b, c_b, b_b = from_init("tau"), from_init("contrast"), from_init("baseline")
    else:
        t_b, c_b, b_b = est["tau"], est["contrast"], est["baseline"]
    c_b = np.clip(np.nan_to_num(c_b, nan=0.1), 1e-3, 2.0)
    b_b = np.nan_to_num(b_b, nan=1.0)
    a0 = 2.0 if alpha is None else float(alpha)
    ok = np.isfinite(t_b) & (t_b > 0)
    # D from tau = 1/(D q^alpha) at fixed alpha: geometric mean over bins.
    log_d0 = float(np.mean(-np.log(t_b[ok]) - a0 * np.log(qs[ok]))) if ok.any() else 0.0

    # Parameter vector: [log D, alpha, contrast_1..nb, baseline_1..nb]; one "curve"
    # whose points are all (bin, delay) pairs.
    y = g2[idx].ravel()
    sigma = sigma_all[idx].ravel()
    m = mask[idx].ravel()
    t_all = np.tile(tau, nb)
    bin_of = np.repeat(np.arange(nb), n_t)
    x0 = np.concatenate([[log_d0, a0], c_b, b_b])
    lo = np.concatenate([[log_d0 - 30.0, 0.5], np.zeros(nb), np.minimum(0.5, b_b - 0.2)])
    hi = np.concatenate([[log_d0 + 30.0, 4.0], np.maximum(2.0, 2 * c_b),
                         np.maximum(1.5, b_b + 0.2)])
    free = np.ones(x0.size, bool)
    if alpha is not None:
        free[1] = False
        lo[1] = hi[1] = a0
    x, cost, jac, n_iter, code = _joint_solve(
        t_all, y, sigma, m, x0, lo, hi, free, qs, bin_of, max_iter
    )
    n_pts = int(m.sum())
    n_free = int(free.sum())
    dof = n_pts - n_free
    chi2_red = 2.0 * cost / dof if dof > 0 else nan
    jf = jac[:, free]
    try:
        cov = np.linalg.inv(jf.T @ jf) * chi2_red
        errs = np.zeros(x.size)
        errs[free] = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        errs = np.full(x.size, np.nan)
    d = float(np.exp(x[0]))
    if not np.all(np.isfinite(x)):
        status = FitStatus.FAILED
    elif code == 2:
        status = FitStatus.FAILED
    elif (x[0] <= lo[0] + 1e-9) or (x[0] >= hi[0] - 1e-9) or (
        alpha is None and (x[1] <= lo[1] + 1e-9 or x[1] >= hi[1] - 1e-9)
    ):
        status = FitStatus.AT_BOUND
    else:
        status = FitStatus.CONVERGED
    contrast, contrast_err = empty.copy(), empty.copy()
    baseline, baseline_err = empty.copy(), empty.copy()
    contrast[idx], contrast_err[idx] = x[2 : 2 + nb], errs[2 : 2 + nb]
    baseline[idx], baseline_err[idx] = x[2 + nb :], errs[2 + nb :]
    return JointDiffusionResult(
        D=d,
        D_err=d * float(errs[0]),
        alpha=float(x[1]),
        alpha_err=float(errs[1]),
        contrast=contrast,
        contrast_err=contrast_err,
        baseline=baseline,
        baseline_err=baseline_err,
        chi2_red=float(chi2_red),
        status=status,
        used_bins=use,
        n_iter=int(n_iter),
        alpha_fixed=alpha is not None,
    )


def _joint_solve(t, y, sigma, mask, x0, lo, hi, free, qs, bin_of, max_iter):
    """Projected LM for the joint model with an analytic Jacobian (NumPy, host).

    The problem is one curve with 2 + 2 Nq parameters, so a batched kernel brings
    nothing; the analytic Jacobian keeps it exact and fast.
    """
    nb = qs.size
    w = np.where(mask, 1.0 / sigma, 0.0)
    n_par = x0.size
    lq = np.log(qs)[bin_of]

    def resid_jac(x):
        log_d, a = x[0], x[1]
        c = x[2 : 2 + nb][bin_of]
        b = x[2 + nb :][bin_of]
        rate = np.exp(log_d + a * lq)  # 1/tau per point
        e = np.exp(-2.0 * t * rate)
        g = b + c * e
        r = (g - np.where(mask, y, 0.0)) * w
        jac = np.zeros((t.size, n_par))
        dg_drate = c * e * (-2.0 * t)
        jac[:, 0] = dg_drate * rate * w
        jac[:, 1] = dg_drate * rate * lq * w
        rows = np.arange(t.size)
        jac[rows, 2 + bin_of] = e * w
        jac[rows, 2 + nb + bin_of] = w
        jac[:, ~free] = 0.0
        return r, jac

    x = np.clip(x0, lo, hi)
    r, jac = resid_jac(x)
    cost = 0.5 * r @ r
    lam = 1e-3
    code = 2
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - it is reported
        a = jac.T @ jac
        g = jac.T @ r
        dg = np.maximum(np.diag(a), 1e-12 * np.max(np.diag(a)) + 1e-300)
        a = a + np.diag(lam * dg)
        a[~free, :] = 0.0
        a[:, ~free] = 0.0
        a[~free, ~free] = 1.0
        g = np.where(free, g, 0.0)
        try:
            dx = -np.linalg.solve(a, g)
        except np.linalg.LinAlgError:
            dx = np.full(n_par, np.nan)
        x_new = np.where(free, np.clip(x + dx, lo, hi), x)
        r_new, j_new = resid_jac(x_new)
        cost_new = 0.5 * r_new @ r_new
        accept = np.isfinite(cost_new) and cost_new <= cost
        small = (accept and (cost - cost_new) <= 1e-14 * cost
                 and np.linalg.norm(x_new - x) <= 1e-12 * (np.linalg.norm(x) + 1e-12))
        if accept:
            x, r, jac, cost = x_new, r_new, j_new, cost_new
            lam = max(lam / 3.0, 1e-12)
        else:
            lam *= 4.0
        if small or lam > 1e16:
            code = 1
            break
    return x, cost, jac, it, code

