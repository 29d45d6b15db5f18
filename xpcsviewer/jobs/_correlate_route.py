"""The device and engine of a ``correlate`` job (issue 31), decided before JAX loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends.routing import Route, route


@dataclass(frozen=True)
class EnginePlan:
    """``engine`` for the correlators ("compiled" or "xla"), ``device`` ("cpu"/"gpu"),
    the routes consulted, and whether JAX is needed at all."""

    engine: str
    device: str
    routes: tuple[Route, ...]

    @property
    def needs_jax(self) -> bool:
        return self.engine == "xla"

    def as_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engine": self.engine, "device": self.device}
        for r in self.routes:
            for k, v in r.as_config().items():
                out[f"{r.kind}_{k}" if len(self.routes) > 1 else k] = v
        return out

    def describe(self) -> str:
        why = "; ".join(f"{r.kind}: {r.reason}" for r in self.routes)
        return f"{self.engine} engine on the {self.device.upper()} ({why})"


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


def plan_engine(requested_engine: str, requested_device: str, mode: str, qm: Any,
                n_frames: int, frame_bytes: int, bins: Any, *, photons: bool = False,
                profile: Any = None, accelerators: Any = None) -> EnginePlan:
    """Route a job: per pass kind, the cheaper device by the machine profile.

    ``requested_engine``: "auto" (compiled on the CPU, XLA on a GPU), "compiled" (the
    CPU whatever the route) or "xla" (the XLA program on the routed device).
    """
    if photons:  # the photon correlator is a CPU engine
        r = route("sparse", work=0.0, requested=requested_device, profile=profile,
                  accelerators=accelerators)
        return EnginePlan("compiled", "cpu", (r,))
    work = dense_work(mode, qm, n_frames, bins)
    nbytes = float(frame_bytes) * n_frames
    if requested_engine == "compiled":
        routes = tuple(route(k, work=w, nbytes=nbytes, requested="cpu", profile=profile,
                             accelerators=accelerators) for k, w in work.items())
        return EnginePlan("compiled", "cpu", routes)
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
    if requested_engine == "xla":
        return EnginePlan("xla", device, routes)
    return EnginePlan("xla" if device == "gpu" else "compiled", device, routes)
