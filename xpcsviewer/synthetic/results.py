"""Result files from the analytic model plus noise: fast fixtures for tests.

A file is described by a small *spec* dict (geometry, partition, acquisition,
sample truth, analysis type). The same specs drive the frame simulator and our
correlator in :mod:`xpcsviewer.synthetic.simulated`, which makes the demo set;
:func:`build_result` is the instant analytic stand-in for tests that need any
well-formed file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.model.result import Multitau, QMap, Twotime, XpcsResult
from xpcsviewer.synthetic.analytic import (
    c2_model,
    decay_rate,
    g2_model,
    sphere_form_factor,
    stokes_einstein,
    water_viscosity,
)
from xpcsviewer.synthetic.speckle import Geometry

__all__ = ["build_result", "multitau_delays", "spec_qmap", "twotime_sample_truth",
           "twotime_truth"]


def multitau_delays(n_frames: int, dpl: int = 4) -> np.ndarray:
    """Multi-tau delays in frames (1..2*dpl at level 0, then dpl per level doubling).

    With dpl = 4: 1..8, 10, 12, 14, 16, 20, ... (the standard correlator's list),
    stopping before the delay reaches the usable length at that level.
    """
    out = list(range(1, 2 * dpl + 1))
    level = 1
    while True:
        added = False
        for x in range(dpl + 1, 2 * dpl + 1):
            d = x * 2**level
            if d >= (n_frames // 2**level) * 2**level:
                break
            out.append(d)
            added = True
        if not added:
            break
        level += 1
    return np.array([d for d in out if d < n_frames], dtype=np.int64)


def spec_qmap(spec: dict[str, Any]) -> tuple[QMap, np.ndarray, np.ndarray]:
    """The partition of a spec, plus per-pixel (q, phi)."""
    geo = Geometry(**spec["geometry"])
    q, phi = geo.qmap()
    part = dict(spec.get("partition", {}))
    mask = (q > part.pop("q_min", 0.0)) & (q < part.pop("q_max", np.inf))
    if spec.get("beamstop_px"):
        r = np.hypot(
            *np.meshgrid(
                np.arange(geo.shape[0]) - geo.bcy,
                np.arange(geo.shape[1]) - geo.bcx,
                indexing="ij",
            )
        )
        mask &= r > spec["beamstop_px"]
    grid = PartitionGrid(part.get("dq_num", 12), part.get("sq_num", 120),
                         part.get("dp_num", 1), part.get("sp_num", 1),
                         q_style=part.get("q_style", "linear"))
    qm = make_partition(q, phi, mask, grid, DetectorGeometry(
        beam_center_x=geo.bcx, beam_center_y=geo.bcy, detector_distance=geo.det_dist_m,
        pixel_size=geo.pixel_size_m, energy_kev=geo.energy_kev))
    return qm, q, phi


def twotime_truth(spec: dict[str, Any], qmap: QMap | None = None,
                  bins: Any = None) -> dict[str, Any]:
    """The local relaxation time of a two-time spec's bins: Gamma(t) = Gamma0 / (1 +
    t / ageing_time) gives tau(t_w) = tau0 (1 + t_w / ageing_time), the linear ageing
    law with slope ``ageing_slope`` = tau0 / ageing_time (0 and an infinite ageing
    time without ageing). Arrays per two-time bin (1-based ``bins``, default the
    spec's); tau0 = 1 / Gamma0 in s.
    """
    qm = qmap if qmap is not None else spec_qmap(spec)[0]
    smp = dict(spec.get("sample", {}))
    temp = float(smp.get("temperature_k", 298.15))
    eta = float(smp.get("viscosity_pa_s", water_viscosity(temp)))
    D = stokes_einstein(float(smp.get("radius_m", 100e-9)), temp, eta)
    if bins is None:
        tcfg = spec.get("twotime", {})
        bins = tcfg.get("bins", [2, qm.n_dynamic // 2, qm.n_dynamic - 1])
    b = np.unique(np.clip(np.asarray(bins, np.int64), 1, qm.n_dynamic))
    q, phi = np.asarray(qm.dynamic_q, float)[b - 1], np.asarray(qm.dynamic_phi, float)[b - 1]
    gamma0 = decay_rate(q, D, phi, float(smp.get("flow_rate", 0.0)),
                        float(smp.get("flow_angle_deg", 0.0)))
    ta = float(smp.get("ageing_time_s") or np.inf)
    tau0 = 1.0 / gamma0
    return {"bins": b, "q": q, "tau0": tau0, "ageing_time": ta,
            "ageing_slope": tau0 / ta, "law": "tau = tau0 * (1 + t_w / ageing_time)"}


def twotime_sample_truth(spec: dict[str, Any], qmap: QMap | None = None
                         ) -> dict[str, tuple[Any, str]]:
    """The two-time truth a demo file states under ``/entry/sample`` (``{key: (value,
    unit)}``; empty without two-time): its bins, tau0 per bin and, for an ageing
    sample, the law tau(t_w) = tau0 (1 + t_w / ageing_time) and its slope per bin."""
    if "Twotime" not in tuple(spec.get("analysis", ())):
        return {}
    t = twotime_truth(spec, qmap)
    out: dict[str, tuple[Any, str]] = {"twotime_bins": (t["bins"], ""),
                                       "tau0_twotime": (t["tau0"], "s")}
    if np.isfinite(t["ageing_time"]):
        out["ageing_law"] = ("tau(t_w) = tau0_twotime * (1 + t_w / ageing_time)", "")
        out["ageing_slope"] = (t["ageing_slope"], "")
    return out


def _bin_means(
    values: np.ndarray, roi: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    r = roi.ravel().astype(np.int64)
    cnt = np.bincount(r, minlength=n + 1)[1:]
    s = np.bincount(r, weights=values.ravel(), minlength=n + 1)[1:]
    return s / np.maximum(cnt, 1), cnt


def build_result(
    spec: dict[str, Any], seed: int = 0
) -> tuple[XpcsResult, dict[str, Any]]:
    """Build an XpcsResult and its big arrays from a spec, with seeded noise.

    Spec keys: ``name``; ``geometry`` (:class:`Geometry` fields); ``partition``
    (dq_num, sq_num, dp_num, sp_num, q_style, q_min); ``acquisition``
    (frame_time s, n_frames, rate photons/pixel/frame at q -> 0); ``sample``
    (model "brownian" | "sheared" | "ageing" | "damage", radius_m, temperature_k,
    viscosity_pa_s (default water), contrast, flow_rate Angstrom/s, flow_angle_deg,
    ageing_time_s, damage_time_s); ``analysis`` (tuple of "Multitau", "Twotime");
    ``twotime`` (n_frames, bins: 1-based dynamic bins).

    Returns
    -------
    result : XpcsResult
    extras : dict
        ``saxs_2d`` (H, W), ``c2_maps`` (list of (N, N)), ``truth`` (the sample dict
        with D in Angstrom^2/s) for :func:`xpcsviewer.io.results.writer.write_result`.
    """
    rng = np.random.default_rng(seed)
    qm, q, _phi = spec_qmap(spec)
    acq = spec.get("acquisition", {})
    frame_time = float(acq.get("frame_time", 1e-5))
    n_frames = int(acq.get("n_frames", 100_000))
    rate0 = float(acq.get("rate", 0.5))
    smp = dict(spec.get("sample", {}))
    model = smp.get("model", "brownian")
    radius = float(smp.get("radius_m", 100e-9))
    temp = float(smp.get("temperature_k", 298.15))
    eta = float(smp.get("viscosity_pa_s", water_viscosity(temp)))
    D = stokes_einstein(radius, temp, eta)
    beta = float(smp.get("contrast", 0.2))
    flow_rate = float(smp.get("flow_rate", 0.0))
    flow_angle = float(smp.get("flow_angle_deg", 0.0))
    t_damage = smp.get("damage_time_s")
    truth = {
        "model": model,
        "D": (D, "\u00c5^2/s"),
        "radius": (radius, "m"),
        "temperature": (temp, "K"),
        "viscosity": (eta, "Pa s"),
        "contrast": (beta, ""),
        "description": spec.get("description", ""),
    }
    if flow_rate:
        truth["flow_rate"] = (flow_rate, "\u00c5/s")
        truth["flow_angle"] = (flow_angle, "deg")
    if smp.get("ageing_time_s"):
        truth["ageing_time"] = (float(smp["ageing_time_s"]), "s")
    if t_damage:
        truth["damage_time"] = (float(t_damage), "s")
    truth.update(twotime_sample_truth(spec, qm))

    # Scattering: sphere form factor times the incident rate; mean over N frames
    # carries Poisson noise of the total counts.
    mask = qm.mask
    img = rate0 * sphere_form_factor(q, radius) + 0.02 * rate0
    saxs_2d = np.where(mask, rng.poisson(img * n_frames) / n_frames, 0.0)
    saxs_1d, s_cnt = _bin_means(saxs_2d, qm.static_roi_map, qm.n_static)
    d_mean, d_cnt = _bin_means(img * mask, qm.dynamic_roi_map, qm.n_dynamic)

    # Time series: 10 segments, intensity vs time (with beam damage drift).
    t_all = np.arange(n_frames) * frame_time
    drift = np.ones(n_frames) if not t_damage else np.exp(-t_all / float(t_damage))
    n_seg = 10
    seg_f = np.array(
        [
            drift[i * n_frames // n_seg : (i + 1) * n_frames // n_seg].mean()
            for i in range(n_seg)
        ]
    )
    npix = max(int(mask.sum()), 1)
    segments = (
        saxs_1d[None, :]
        * seg_f[:, None]
        * (
            1
            + rng.normal(0, 1, (n_seg, qm.n_static))
            / np.sqrt(np.maximum(saxs_1d * s_cnt * n_frames / n_seg, 1))
        )
    )
    mean_i = float(saxs_2d[mask].mean())
    int_t = np.vstack(
        [
            np.arange(n_frames, dtype=np.float64),
            rng.poisson(mean_i * drift * npix) / npix,
        ]
    )

    dq, dphi = qm.dynamic_q, qm.dynamic_phi
    atype = tuple(spec.get("analysis", ("Multitau",)))
    mt = tt = None
    c2_maps: list[np.ndarray] = []
    if "Multitau" in atype:
        delays = multitau_delays(n_frames)
        tau = delays * frame_time
        g2 = g2_model(
            tau, dq, D, beta, phi=dphi, flow_rate=flow_rate, flow_angle_deg=flow_angle
        )
        # Approximate shot-noise error of a bin average: fewer photons, fewer pixels
        # and fewer frame pairs at long delays give larger errors.
        nu = np.maximum(d_mean, 1e-6)
        pairs = np.maximum(n_frames - delays, 1)[:, None]
        err = (1.0 + beta + 1.0 / nu)[None, :] / np.sqrt(d_cnt[None, :] * pairs)
        if t_damage:
            # Damaged sample: dynamics speed up as the dose accumulates; g2 is the
            # time average over the run and partial snapshots show the change.
            n_p = 5
            parts = []
            for k in range(1, n_p + 1):
                tk = t_all[: k * n_frames // n_p]
                speed = (1.0 + tk / float(t_damage)).mean()
                gk = g2_model(tau, dq, D * speed, beta)
                parts.append(gk + err * np.sqrt(n_p / k) * rng.normal(size=gk.shape))
            g2 = g2_model(tau, dq, D * (1.0 + t_all / float(t_damage)).mean(), beta)
        g2_obs = g2 + err * rng.normal(size=g2.shape)
        mt = Multitau(
            delay_frames=delays,
            tau=tau,
            g2=g2_obs,
            g2_err=err,
            valid=np.ones(g2.shape, bool),
            t0_eff=frame_time,
            config={
                "normalize_frame": True,
                "smooth": "sqmap",
                "begin_frame": 0,
                "end_frame": -1,
                "source": "xpcsviewer analytic model",
            },
        )
        if t_damage:
            mt.g2_partial = np.array(parts)
            mt.g2_partial_err = np.array(
                [err * np.sqrt(n_p / k) for k in range(1, n_p + 1)]
            )
            mt.g2_partial_labels = np.array(
                [k * n_frames // n_p for k in range(1, n_p + 1)]
            )
    if "Twotime" in atype:
        tcfg = spec.get("twotime", {})
        n2 = int(tcfg.get("n_frames", min(n_frames, 500)))
        bins = np.asarray(
            tcfg.get("bins", [2, qm.n_dynamic // 2, qm.n_dynamic - 1]), dtype=np.int64
        )
        bins = np.unique(np.clip(bins, 1, qm.n_dynamic))
        t2 = np.arange(n2) * frame_time
        ta = smp.get("ageing_time_s")
        fac = None if not ta else (lambda t, ta=float(ta): 1.0 / (1.0 + t / ta))
        for b in bins:
            g0 = float(decay_rate(dq[b - 1], D, dphi[b - 1], flow_rate, flow_angle))
            c = c2_model(t2, g0, beta, fac)
            nu = max(float(d_mean[b - 1]), 1e-6)
            sig = (1.0 + 1.0 / nu) / np.sqrt(d_cnt[b - 1])
            noise = rng.normal(0, sig, (n2, n2))
            c += np.triu(noise) + np.triu(noise, 1).T
            c[np.diag_indices(n2)] += (
                1.0 / (nu * d_cnt[b - 1]) + sig
            )  # shot-noise spike at t1 = t2
            c2_maps.append(c)
        tt = Twotime(
            processed_bins=bins,
            map_names=[f"c2_{i + 1:05d}" for i in range(len(bins))],
            n_frames=n2,
            t0=frame_time,
        )
        if mt is None:
            int_t = int_t[:, :n2]
            n_frames = n2
    result = XpcsResult(
        path=spec.get("name", "synthetic") + "_results.hdf",
        analysis_type=tuple(a for a in ("Twotime", "Multitau") if a in atype),
        layout="nexus",
        qmap=qm,
        frame_time=frame_time,
        count_time=0.9 * frame_time,
        start_time=spec.get("start_time", "2026-01-01T00:00:00"),
        saxs_1d=saxs_1d,
        saxs_1d_segments=segments,
        intensity_vs_time=int_t,
        multitau=mt,
        twotime=tt,
        sample={k: (v[0] if isinstance(v, tuple) else v) for k, v in truth.items()},
        sample_units={
            k: v[1] for k, v in truth.items() if isinstance(v, tuple) and v[1]
        },
    )
    return result, {"saxs_2d": saxs_2d, "c2_maps": c2_maps, "truth": truth}
