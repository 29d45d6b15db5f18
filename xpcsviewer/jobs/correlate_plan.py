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

__all__ = ["CorrelatePlan", "EnginePlan", "MemoryRefused", "dense_work", "plan_correlate",
           "plan_engine", "xla_photon_options"]

#: a time-tag run keeps its per-frame means in at most this many rows
TRACE_ROWS = 100_000


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
                profile: Any = None, accelerators: Any = None) -> EnginePlan:
    """Route a job: per pass kind, the cheaper device by the machine profile.

    ``requested_engine``: auto (compiled on the CPU, XLA on a GPU), compiled or array
    (the CPU whatever the route) or xla (the XLA program on the routed device).
    """
    requested_engine = Engine.parse(requested_engine)
    if photons:
        if requested_engine is Engine.ARRAY:
            # asked for and cannot run: refused, never swapped in silence (issue 47)
            raise SpecError(
                f"--engine {requested_engine.value}: the photon path has the compiled CPU "
                "engine and the XLA engine (--engine xla); use one of those, or --path "
                "dense")
        r = route("sparse", work=0.0, requested=requested_device, profile=profile,
                  accelerators=accelerators)
        if requested_engine is Engine.XLA:
            # the XLA photon engine (issue 47): on the requested device; "auto" takes a
            # GPU when one is present (the job-cost model has no photon GPU row yet)
            from xpcsviewer.backends.routing import gpu_present

            has_gpu = gpu_present() if accelerators is None else bool(accelerators)
            if requested_device == "cpu" or not has_gpu:
                why = ("CPU requested" if requested_device == "cpu" else "no GPU present")
                dev = "cpu"
            else:
                why, dev = ("GPU requested" if requested_device == "gpu"
                            else "a GPU is present (XLA photon engine asked for)"), "gpu"
            return EnginePlan(Engine.XLA, dev, (Route("sparse", dev, why, r.estimates,
                                                      r.profile),))
        return EnginePlan(Engine.COMPILED, "cpu", (r,))
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
        return out

    def describe(self) -> str:
        return self.engine.describe()


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
    engine = plan_engine(request.engine, request.device or device, spec.mode, qmap, n,
                         itemsize * qmap.shape[0] * qmap.shape[1], bins,
                         photons=choice.path == "sparse", profile=profile,
                         accelerators=accelerators)
    if choice.path == "sparse" and engine.engine is Engine.XLA:
        xla_photon_options(spec, bool(getattr(source, "time_tag", False)))
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
                         bool(getattr(source, "sparse", False)), request.said)


def xla_photon_options(spec: CorrelateSpec, time_tag: bool) -> None:
    """Refuse what the XLA photon engine does not do yet, naming the option (issue 47:
    an engine asked for runs, or the job is refused; never a silent swap).

    Raises
    ------
    SpecError
    """
    lacks = []
    if spec.two_time:
        lacks.append(f"--mode {spec.mode} (two-time on photons)")
    if spec.ages:
        lacks.append("--twotime-ages")
    if time_tag:
        lacks.append("time-tag mode (an event list without --bin-time)")
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
