"""How a correlation job runs, decided once (issue 44): :func:`plan_correlate`.

The path (photons or dense frames), the engine and device (issue 31: by the job's
estimated cost, before JAX loads), the memory check, the pixel-group and scattering
choices, with the estimates and reasons. Nothing below the plan decides how a job runs:
the result records :meth:`CorrelatePlan.as_config` and the command prints
:meth:`CorrelatePlan.describe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends.routing import Route, route
from xpcsviewer.compute.spec import CorrelateSpec, Engine, PlanRequest, SpecError

__all__ = ["CorrelatePlan", "EnginePlan", "MemoryRefused", "dense_work", "faster_job",
           "photon_units", "plan_correlate", "plan_engine", "xla_photon_options"]

#: a time-tag run keeps its per-frame means in at most this many rows
TRACE_ROWS = 100_000
#: bytes of one hit sent to a device (frame, pixel, value as read)
EVENT_BYTES = 16


class MemoryRefused(RuntimeError):
    """The job needs more memory than the machine has free (exit 1); the text says how
    much and what to change."""


@dataclass(frozen=True)
class EnginePlan:
    """``engine`` for the correlators ("compiled" or "xla"), ``device`` ("cpu"/"gpu"),
    the routes consulted, and whether JAX is needed at all."""

    engine: Engine
    device: str
    routes: tuple[Route, ...]

    @property
    def needs_jax(self) -> bool:
        return self.engine is Engine.XLA

    def as_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engine": str(self.engine), "device": self.device}
        for r in self.routes:
            for k, v in r.as_config().items():
                out[f"{r.kind}_{k}" if len(self.routes) > 1 else k] = v
        return out

    def describe(self) -> str:
        why = "; ".join(f"{r.kind}: {r.reason}" for r in self.routes)
        return f"{self.engine.value} engine on the {self.device.upper()} ({why})"


def dense_work(mode: str, qm: Any, n_frames: int, bins: Any) -> dict[str, float]:
    """Work units of the dense passes of a job (see :mod:`xpcsviewer.backends.routing`)."""
    dyn = np.asarray(qm.dynamic_roi_map)
    used = (np.asarray(qm.mask) > 0) & (dyn > 0) & (np.asarray(qm.static_roi_map) > 0)
    out: dict[str, float] = {}
    if mode in ("multitau", "both"):
        out["multitau"] = float(used.sum()) * n_frames
    if mode in ("twotime", "both"):
        counts = np.bincount(dyn[used].ravel(), minlength=qm.n_dynamic + 1)
        pix = sum(int(counts[b]) for b in (bins if bins is not None else []))
        out["twotime"] = float(pix) * n_frames * n_frames / 2.0
    return out


def plan_engine(requested_engine: Engine | str, requested_device: str, mode: str, qm: Any,
                n_frames: int, frame_bytes: int, bins: Any, *, photons: bool = False,
                profile: Any = None, accelerators: Any = None, photon_units: float = 0.0,
                event_bytes: float = 0.0, xla_lacks: str = "") -> EnginePlan:
    """Route a job: per pass kind, the cheaper device by the machine profile.

    ``requested_engine``: auto (compiled on the CPU, XLA on a GPU), compiled or array
    (the CPU whatever the route) or xla (the XLA program on the routed device).
    ``photon_units``, ``event_bytes``: the photon job's work (see
    :mod:`xpcsviewer.backends.routing`); ``xla_lacks``: what of this job the XLA photon
    engine does not do (then auto keeps the photons on the CPU and says so).
    """
    requested_engine = Engine.parse(requested_engine)
    if photons:
        if requested_engine is Engine.ARRAY:
            # asked for and cannot run: refused, never swapped in silence (issue 47)
            raise SpecError(
                f"--engine {requested_engine.value}: the photon path has the compiled CPU "
                "engine and the XLA engine (--engine xla); use one of those, or --path "
                "dense")
        req = "cpu" if requested_engine is Engine.COMPILED else requested_device
        r = route("sparse", work=photon_units, nbytes=event_bytes, requested=req,
                  profile=profile, accelerators=accelerators)
        if requested_engine is Engine.XLA:
            # the XLA photon engine on the routed device; auto on a GPU machine takes the
            # GPU by the estimates, and the CPU when the GPU is dearer
            return EnginePlan(Engine.XLA, r.device, (r,))
        if r.device == "gpu" and xla_lacks:
            why = f"the XLA photon engine does not do {xla_lacks}; {r.reason}"
            return EnginePlan(Engine.COMPILED, "cpu", (Route("sparse", "cpu", why,
                                                             r.estimates, r.profile),))
        return EnginePlan(Engine.XLA if r.device == "gpu" else Engine.COMPILED, r.device,
                          (r,))
    work = dense_work(mode, qm, n_frames, bins)
    nbytes = float(frame_bytes) * n_frames
    if requested_engine in (Engine.COMPILED, Engine.ARRAY):
        routes = tuple(route(k, work=w, nbytes=nbytes, requested="cpu", profile=profile,
                             accelerators=accelerators) for k, w in work.items())
        return EnginePlan(requested_engine, "cpu", routes)
    routes = tuple(route(k, work=w, nbytes=nbytes, requested=requested_device,
                         profile=profile, accelerators=accelerators)
                   for k, w in work.items())
    if len(routes) == 1:
        device = routes[0].device
    else:  # one device for both passes: the smaller summed estimate
        def total(dev: str) -> float:
            s = [r.estimates.get(dev) for r in routes]
            return float("inf") if any(v is None for v in s) else float(sum(s))

        forced = {r.device for r in routes if r.reason.endswith("requested")}
        device = forced.pop() if len(forced) == 1 else (
            "gpu" if all(r.estimates.get("gpu") is not None for r in routes)
            and total("gpu") < total("cpu") else "cpu")
    if requested_engine is Engine.XLA:
        return EnginePlan(Engine.XLA, device, routes)
    return EnginePlan(Engine.XLA if device == "gpu" else Engine.COMPILED, device, routes)


def photon_units(choice: Any) -> float:
    """A photon job's work in the routing model's photon units (its path-model estimate
    on the numba engine / ``PHOTON_UNIT_S``; 0 where photons cannot run)."""
    from xpcsviewer.backends.routing import PHOTON_UNIT_S

    sec = float(getattr(choice, "sparse_s", 0.0))
    return sec / PHOTON_UNIT_S if np.isfinite(sec) else 0.0


def _job_seconds(choice: Any, plan: EnginePlan, photons: bool, dev: str) -> float | None:
    """Estimated seconds of ``plan``'s path on ``dev`` (None: cannot run there). On the
    CPU the path model's (:func:`~xpcsviewer.compute.pipeline_sparse.estimate_costs`,
    measured for both paths on the compiled engines, frames formed from the hits
    included); on a GPU that times the routing model's GPU/CPU ratio for the path's
    rows (sparse; multitau, twotime), so a calibration moves both the same way."""
    base = float(choice.sparse_s if photons else choice.dense_s)
    if not np.isfinite(base):
        return None
    if dev == "cpu":
        return base
    gpu = [r.estimates.get("gpu") for r in plan.routes]
    cpu = [r.estimates.get("cpu") for r in plan.routes]
    if any(x is None for x in gpu + cpu):
        return None
    g, c = float(sum(gpu)), float(sum(cpu))
    return base * g / c if c > 0 else base + g


def faster_job(choice: Any, plan: EnginePlan, other: EnginePlan, *, xla_lacks: str = ""
               ) -> tuple[Any, EnginePlan, str, dict[str, float]]:
    """``--path auto --engine auto`` on a photon source (issue 47): the fastest of
    photons and dense frames on the CPU (compiled engines) and on a GPU (XLA engines).
    Only where a GPU takes part (without one the path model of
    :func:`~xpcsviewer.compute.pipeline_sparse.choose_path` decides, as before, and
    between the two CPU candidates it still does); a tie keeps the CPU, then the path
    model's path. ``plan`` and ``other`` are the two paths' engine plans (each routed
    to its cheaper device, which is what runs).

    Returns (path choice, engine plan, reason, estimates by candidate).
    """
    from dataclasses import replace

    photons = choice.path == "sparse"
    est: dict[str, float] = {}
    rows = []
    for ph, p in ((photons, plan), (not photons, other)):
        for dev in ("cpu", "gpu"):
            sec = _job_seconds(choice, p, ph, dev)
            if sec is None or (ph and dev == "gpu" and xla_lacks):
                continue
            name = f"{'photons' if ph else 'dense'}_{dev}"
            est[name] = sec
            rows.append((sec, dev != "cpu", ph != photons, name, ph, p))
    if not any(r[1] for r in rows):
        return choice, plan, "", {}
    rows.sort(key=lambda r: r[:3])
    sec, _, _, name, ph, best = rows[0]
    dev = name.split("_")[1]
    if best.device != dev:  # a tie the route broke the other way: run what was estimated
        best = replace(best, device=dev, engine=Engine.XLA if dev == "gpu" else (
            Engine.COMPILED if best.engine is Engine.XLA else best.engine))
    src = "; ".join(dict.fromkeys(f"{r.kind}: {r.profile}"
                                  for p in (plan, other) for r in p.routes))
    others = ", ".join(f"{_said(n)} {s:.3g} s" for n, s in est.items() if n != name)
    why = f"fastest job: {_said(name)}, est. {sec:.3g} s (vs {others}; profile {src})"
    path = "sparse" if ph else "dense"
    if path != choice.path:
        choice = replace(choice, path=path, reason=why)
    return choice, best, why, est


def _said(name: str) -> str:
    what, dev = name.split("_")
    return f"{what} on the {dev.upper()}"


def _bin_pixels(qm: Any, bins: Any) -> list[int]:
    dyn = np.asarray(qm.dynamic_roi_map)
    used = (np.asarray(qm.mask) > 0) & (dyn > 0) & (np.asarray(qm.static_roi_map) > 0)
    counts = np.bincount(dyn[used].ravel(), minlength=qm.n_dynamic + 1)
    return [int(counts[b]) for b in (bins if bins is not None else [])]


def plan_path(requested: str, raw: Any, qm: Any, mode: str, bins: Any) -> Any:
    """The :class:`~xpcsviewer.compute.pipeline_sparse.PathChoice` of a job on ``raw``.

    Raises
    ------
    SpecError
        A path that cannot run on this source.
    """
    from xpcsviewer.compute.pipeline_sparse import choose_path

    try:
        if not getattr(raw, "sparse", False):
            return choose_path(requested, sparse_source=False)
        time_tag = bool(getattr(raw, "time_tag", False))
        if time_tag and mode != "multitau":
            raise SpecError("time-tag mode (an event list without --bin-time) correlates "
                            "multi-tau only; give --bin-time for two-time")
        dyn = np.asarray(qm.dynamic_roi_map)
        used = (np.asarray(qm.mask) > 0) & (dyn > 0) & (np.asarray(qm.static_roi_map) > 0)
        h, w = raw.frame_shape
        # hits of the processed frames: a stride keeps 1 / stride of the raw hits;
        # averaging merges frames (the occupancy per processed frame grows, the hits
        # do not)
        hits = raw.n_events / max(raw.stride, 1)
        return choose_path(requested, sparse_source=True, time_tag=time_tag,
                           n_frames=raw.n_frames, detector_pixels=h * w,
                           correlated_pixels=int(used.sum()), hits=hits, mode=mode,
                           bin_pixels=_bin_pixels(qm, bins))
    except SpecError:
        raise
    except ValueError as exc:
        raise SpecError(str(exc)) from None


def scattering_group(raw: Any) -> int:
    """Frames per row of the per-frame means: 1, or for a time-tag run enough detector
    ticks that the trace keeps at most ``TRACE_ROWS`` rows."""
    import math

    if not getattr(raw, "time_tag", False):
        return 1
    return max(1, math.ceil(raw.n_frames / TRACE_ROWS))


def memory_needed(n: int, qm: Any, mode: str, n_bins: int) -> int:
    """Bytes the correlators hold that grow with the number of frames (an estimate)."""
    need = 0
    if mode in ("multitau", "both"):
        need += n * (qm.n_static + 2) * 8  # per-frame static sums and intensity
    if mode in ("twotime", "both"):
        need += 2 * n * n * 8 + n * max(n_bins, 1) * 8  # one map and its accumulator
    return need


def memory_available() -> int | None:
    """MemAvailable of the machine (None where the system does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@dataclass(frozen=True)
class CorrelatePlan:
    """How one job runs.

    Attributes
    ----------
    path : PathChoice
        Photons or dense frames, with the estimates and the reason.
    engine : EnginePlan
        Engine, device and the routes consulted.
    bins, ages_bins : ndarray or None
        The two-time bins (full maps), the age x lag map's bins (``--twotime-ages``).
    full_groups, groups : int
        Pixel groups of the full maps and of the job (age x lag groups with ages).
    scattering_group : int
        Frames per row of the per-frame means (time-tag runs).
    memory_need, memory_have : int, int or None
        Bytes the job holds, and those free (None: not known).
    sparse_source, time_tag : bool
        What the source is (recorded beside the plan).
    """

    path: Any
    engine: EnginePlan
    bins: Any
    ages_bins: Any
    full_groups: int
    groups: int
    scattering_group: int
    memory_need: int
    memory_have: int | None
    sparse_source: bool
    said: bool = False
    job_reason: str = ""
    job_estimates: Any = None

    @property
    def photons(self) -> bool:
        return self.path.path == "sparse"

    @property
    def backend(self) -> str:
        """The array backend the job loads: JAX only for an XLA program."""
        return "jax" if self.engine.needs_jax else "numpy"

    def as_config(self) -> dict[str, Any]:
        """What the result records of the plan (each analysis group's config)."""
        out: dict[str, Any] = {"backend": self.backend, **self.engine.as_config()}
        if self.sparse_source:
            out.update(self.path.as_config())
        if self.job_reason:
            out["job_route_reason"] = self.job_reason
            for name, sec in (self.job_estimates or {}).items():
                out[f"job_{name}_s_est"] = round(float(sec), 4)
        return out

    def describe(self) -> str:
        said = self.engine.describe()
        return f"{said}; {self.job_reason}" if self.job_reason else said


def plan_correlate(source: Any, qmap: Any, spec: CorrelateSpec, request: PlanRequest, *,
                   device: str = "auto", profile: Any = None,
                   accelerators: Any = None) -> CorrelatePlan:
    """The plan of ``spec`` on an opened raw ``source`` and its q-map.

    ``device``: the run configuration's device when the request names none.

    Raises
    ------
    SpecError
        A setting this source or q-map cannot take (bins outside the q-map, a path or
        group maps that cannot run here).
    MemoryRefused
        The job needs more memory than is free.
    """
    from xpcsviewer.compute.spec import parse_bin_text, parse_bins

    n = int(source.n_frames)
    bins = ages_bins = None
    if spec.uses_bins:
        parse_bin_text(spec.dq, qmap.n_dynamic)  # the range, said as the flag's
        every = parse_bins(spec.dq, qmap.n_dynamic)
        bins = every if spec.two_time else None
        ages_bins = every if spec.ages else None
    if spec.ages and getattr(source, "time_tag", False):
        raise SpecError("--twotime-ages needs frames: give an event list --bin-time "
                        "(time-tag mode is multi-tau only)")
    choice = plan_path(request.path, source, qmap, spec.mode, bins)
    group = scattering_group(source)
    need = memory_needed(-(-n // group), qmap, spec.mode, 0 if bins is None else len(bins))
    have = memory_available()
    if spec.ages:
        from xpcsviewer.compute.ages.correlator import age_lag_bytes

        need += age_lag_bytes(n, spec.ages_points, len(ages_bins))
    if have is not None and need > have:
        raise MemoryRefused(
            f"{n} frames need about {need / 2**30:.1f} GiB, {have / 2**30:.1f} GiB are "
            "available; correlate fewer frames (--end-frame, --stride-frame, --avg-frame)")
    itemsize = np.dtype(getattr(source, "out_dtype", np.dtype(np.uint16))).itemsize
    time_tag = bool(getattr(source, "time_tag", False))
    lacks = ", ".join(_xla_photon_lacks(spec, time_tag))
    kw = {"profile": profile, "accelerators": accelerators, "xla_lacks": lacks,
          "photon_units": photon_units(choice),
          "event_bytes": EVENT_BYTES * float(getattr(source, "n_events", 0) or 0)
          / max(int(getattr(source, "stride", 1) or 1), 1)}
    args = (request.engine, request.device or device, spec.mode, qmap, n,
            itemsize * qmap.shape[0] * qmap.shape[1], bins)
    engine = plan_engine(*args, photons=choice.path == "sparse", **kw)
    job_reason, job_est = "", {}
    if (request.path == "auto" and getattr(source, "sparse", False) and not time_tag
            and Engine.parse(request.engine) is Engine.AUTO
            and (request.device or device) == "auto"):
        other = plan_engine(*args, photons=choice.path != "sparse", **kw)
        choice, engine, job_reason, job_est = faster_job(choice, engine, other,
                                                         xla_lacks=lacks)
    if choice.path == "sparse" and engine.engine is Engine.XLA:
        xla_photon_options(spec, time_tag)
    k = _groups(spec, choice.path == "sparse", n)
    full = k if spec.two_time else 0
    if k and have is not None:
        from xpcsviewer.compute.ages.correlator_groups import group_age_lag_bytes
        from xpcsviewer.compute.twotime.groups import group_maps_bytes

        more = group_maps_bytes(n, full, len(bins)) if full else 0
        if spec.ages:
            more += group_age_lag_bytes(n, spec.ages_points, len(ages_bins), k)
        if need + more > have:
            raise MemoryRefused(
                f"{n} frames with {k} pixel groups need about {(need + more) / 2**30:.1f} "
                f"GiB, {have / 2**30:.1f} GiB are available; fewer frames, bins (--dq) or "
                "groups")
    return CorrelatePlan(choice, engine, bins, ages_bins, full, k, group, need, have,
                         bool(getattr(source, "sparse", False)),
                         request.said or bool(job_reason and engine.device == "gpu"),
                         job_reason, job_est)


def _xla_photon_lacks(spec: CorrelateSpec, time_tag: bool) -> list[str]:
    lacks = []
    if spec.two_time:
        lacks.append(f"--mode {spec.mode} (two-time on photons)")
    if spec.ages:
        lacks.append("--twotime-ages")
    if time_tag:
        lacks.append("time-tag mode (an event list without --bin-time)")
    return lacks


def xla_photon_options(spec: CorrelateSpec, time_tag: bool) -> None:
    """Refuse what the XLA photon engine does not do yet, naming the option (issue 47:
    an engine asked for runs, or the job is refused; never a silent swap).

    Raises
    ------
    SpecError
    """
    lacks = _xla_photon_lacks(spec, time_tag)
    if lacks:
        raise SpecError("--engine xla on the photon path does not do " + ", ".join(lacks)
                        + " yet; use --engine compiled (or auto) for this job")


def _groups(spec: CorrelateSpec, photons: bool, n_frames: int) -> int:
    """The pixel groups this job can make (``spec.groups`` is checked on its own)."""
    from xpcsviewer.compute.twotime.groups import MAX_GROUP_FRAMES

    k = int(spec.groups)
    if k and spec.two_time and photons:
        raise SpecError("--twotime-groups: full maps not on the photon-sparse path (use "
                        "--path dense, or --mode multitau --twotime-ages)")
    if k and spec.two_time and n_frames > MAX_GROUP_FRAMES:
        raise SpecError(f"--twotime-groups: full maps of at most {MAX_GROUP_FRAMES} frames, "
                        f"got {n_frames} (--end-frame, --stride-frame, --avg-frame; or "
                        "--mode multitau --twotime-ages: age x lag group maps of any length)")
    return k
