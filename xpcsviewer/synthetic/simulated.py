"""Result files made the way a beamline makes them: simulated frames through our correlator.

A spec (see :func:`xpcsviewer.synthetic.results.build_result` for the keys) gives the
geometry, partition, acquisition and sample; the frames come from
:func:`~xpcsviewer.synthetic.speckle.iter_frames` and go through
:func:`~xpcsviewer.compute.pipeline.correlate_to_result`, so every number in the file
is what our correlator measured, and the sample truth is written beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.compute.pipeline import (
    CorrelatedResult,
    FrameStream,
    ResultRecord,
    correlate_to_result,
)
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.progress import CancelToken, ProgressCallback
from xpcsviewer.synthetic.analytic import (
    sphere_form_factor,
    stokes_einstein,
    water_viscosity,
)
from xpcsviewer.synthetic.defects import add_hot_pixels, defect_field, hot_pixel_truth
from xpcsviewer.synthetic.results import spec_qmap, twotime_sample_truth
from xpcsviewer.synthetic.speckle import iter_frames

__all__ = ["sample_truth", "simulate_result"]

# Frames are kept in memory for a second (two-time) pass below this size.
_KEEP_BYTES = 96 * 2**20


def sample_truth(spec: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The true sample parameters of a spec as ``{key: (value, unit)}``; D in Angstrom^2/s."""
    smp = spec.get("sample", {})
    temp = float(smp.get("temperature_k", 298.15))
    eta = float(smp.get("viscosity_pa_s", water_viscosity(temp)))
    radius = float(smp.get("radius_m", 100e-9))
    beta = float(smp.get("contrast", 0.2))
    m = max(1, round(1.0 / beta))
    truth: dict[str, tuple[Any, str]] = {
        "model": (smp.get("model", "brownian"), ""),
        "D": (stokes_einstein(radius, temp, eta), "\u00c5^2/s"),
        "radius": (radius, "m"),
        "temperature": (temp, "K"),
        "viscosity": (eta, "Pa s"),
        # the simulator realises 1/M for M modes
        "contrast": (1.0 / m, ""),
        "speckle_modes": (m, ""),
        "description": (spec.get("description", ""), ""),
    }
    if smp.get("flow_rate"):
        truth["flow_rate"] = (float(smp["flow_rate"]), "\u00c5/s")
        truth["flow_angle"] = (float(smp.get("flow_angle_deg", 0.0)), "deg")
    if smp.get("ageing_time_s"):
        truth["ageing_time"] = (float(smp["ageing_time_s"]), "s")
    d = spec.get("defect")
    if d:
        truth["defect"] = (str(d.get("description", d.get("kind", ""))), "")
        for key, name, unit in (("angle_deg", "angle", "deg"),
                                ("half_width_deg", "half_width", "deg"),
                                ("start_px", "start", "pixel"), ("end_px", "end", "pixel"),
                                ("intensity", "intensity", "photons/pixel/frame")):
            truth[f"defect_{name}"] = (float(d[key]), unit)
    truth.update(hot_pixel_truth(spec))
    truth.update(twotime_sample_truth(spec))  # tau(t_w) of two-time files (issue 35)
    if smp.get("damage_time_s"):
        # Gamma(t) = Gamma0 (1 + t / damage_time); intensity exp(-t / intensity_decay_time)
        truth["damage_time"] = (float(smp["damage_time_s"]), "s")
        truth["intensity_decay_time"] = (3.0 * float(smp["damage_time_s"]), "s")
    return truth


def simulate_result(
    spec: dict[str, Any],
    seed: int = 0,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    g2_pixel_sink: Any = None,
) -> CorrelatedResult:
    """Simulate the frames of a spec and correlate them into a result.

    Extra spec keys: ``acquisition.speckle_px`` (default 2),
    ``acquisition.normalize_frame`` (default True); ``analysis`` decides
    the mode ("Multitau", "Twotime" or both); ``twotime.bins`` the two-time bins;
    ``twotime.pixel_groups`` K > 0 also makes the two-time maps of K pixel groups
    (``twotime.group_tile`` px tiles, default 8; ``CorrelatedResult.twotime_groups``);
    samples with ``damage_time_s`` also store 5 partial g2 snapshots; a ``defect``
    entry plants a detector defect and ``hot_pixels`` single bad pixels
    (:mod:`xpcsviewer.synthetic.defects`).
    ``g2_pixel_sink`` receives the per-pixel G2/IP/IF stack (multi-tau only).

    Returns
    -------
    CorrelatedResult
        With ``result.sample`` / ``sample_units`` holding :func:`sample_truth`.
    """
    qm, q, phi = spec_qmap(spec)
    acq = spec.get("acquisition", {})
    frame_time = float(acq.get("frame_time", 1e-5))
    n_frames = int(acq.get("n_frames", 1000))
    rate0 = float(acq.get("rate", 0.5))
    smp = dict(spec.get("sample", {}))
    truth = sample_truth(spec)
    D = truth["D"][0]
    radius = truth["radius"][0]
    ta = smp.get("ageing_time_s")
    td = smp.get("damage_time_s")
    ageing = None
    drift = None
    if ta:
        # an ageing gel slows down
        ageing = lambda t, ta=float(ta): 1.0 / (1.0 + t / ta)  # noqa: E731
    if td:
        # beam damage: the dynamics speed up with the dose, Gamma(t) = Gamma0 (1 + t/t_d),
        # and the scattered intensity falls, exp(-t / (3 t_d))
        ageing = lambda t, td=float(td): 1.0 + t / td  # noqa: E731
        drift = lambda t, td=float(td): np.exp(-np.asarray(t) / (3.0 * td))  # noqa: E731
    rate = rate0 * (sphere_form_factor(q, radius) + float(acq.get("background", 0.02)))
    static = defect_field(spec, q.shape)
    if static is not None:
        # relative to the local speckle intensity; only simulated pixels count
        static = np.where(qm.mask & (rate > 0), static / np.where(rate > 0, rate, 1.0), 0.0)
    sim_kw = {
        "beta": 1.0 / truth["speckle_modes"][0],
        "rate": rate,
        "phi_map": phi,
        "flow_rate": float(smp.get("flow_rate", 0.0)),
        "flow_angle_deg": float(smp.get("flow_angle_deg", 0.0)),
        "ageing": ageing,
        "drift": drift,
        "mask": qm.mask,
        "speckle_px": int(acq.get("speckle_px", 2)),
        "seed": seed,
        "chunk": 256,
        "cancel": cancel,
        "static_field": static,
    }
    atype = tuple(spec.get("analysis", ("Multitau",)))
    mode = "both" if len(atype) == 2 else ("twotime" if "Twotime" in atype else "multitau")
    if mode == "twotime":
        n_frames = int(spec.get("twotime", {}).get("n_frames", n_frames))

    def fresh():
        return add_hot_pixels(iter_frames(q, n_frames, frame_time, D, **sim_kw), spec,
                              frame_time, seed)

    kept: list[np.ndarray] | None = None
    n_groups = int(spec.get("twotime", {}).get("pixel_groups", 0)) if mode != "multitau" else 0
    # the passes read the same frames: kept, rather than simulated again, when they fit
    if (mode == "both" or n_groups) and n_frames * q.size * 2 <= _KEEP_BYTES:
        kept = list(fresh())

    def chunks():
        return iter(kept) if kept is not None else fresh()

    twotime = spec.get("twotime", {})
    bins = twotime.get("bins", "all")
    out = correlate_to_result(
        FrameStream(chunks, n_frames, frame_time),
        qm,
        CorrelateSpec(
            mode=mode,
            dq=None if bins == "all" else ",".join(str(b) for b in np.atleast_1d(bins)),
            # per-frame normalisation, as at the beamline: it takes out the incident
            # flux and the damage-driven intensity loss, which would otherwise inflate g2
            normalize_frame=bool(acq.get("normalize_frame", True)),
            num_partial_g2=5 if td and mode != "twotime" else 0,
            groups=n_groups, group_tile=int(twotime.get("group_tile", 8)),
            save_g2_pixel=g2_pixel_sink is not None),
        ResultRecord(
            path=spec.get("name", "synthetic") + "_results.hdf",
            config={"source": "xpcsviewer simulated speckle frames", "seed": int(seed)},
            count_time=0.9 * frame_time,
            start_time=spec.get("start_time", "2026-01-01T00:00:00"),
            pixel_sink=g2_pixel_sink),
        progress=progress,
        cancel=cancel,
    )
    out.result.sample = {k: v[0] for k, v in truth.items()}
    out.result.sample_units = {k: v[1] for k, v in truth.items() if v[1]}
    return out
