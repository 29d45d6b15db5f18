"""``xpcsviewer device --calibrate``: measure this machine's job costs (issue 31).

Each job kind runs at two sizes on each device present (the CPU always, a GPU when one
is), warm, and once cold; per device and kind the profile stores

- ``per_unit_s`` = (t_large - t_small) / (work_large - work_small), warm;
- ``compile_s`` = the fixed part of a job: the cold first call minus the warm one, plus
  the warm intercept (whatever does not grow with the work);
- for photon jobs (``sparse``) the numba engine on the CPU and the XLA photon engine on
  a GPU, in photon units (:data:`~xpcsviewer.backends.routing.PHOTON_UNIT_S`);
- for the GPU ``startup_s`` (a fresh process that starts the GPU minus one that starts
  the CPU only) and ``bytes_per_s`` (host to device copies of 256 MiB).

The figures are whole calls of the job functions, so they include transfers and the
host loop. Written atomically to :func:`~xpcsviewer.backends.routing.profile_path`.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from xpcsviewer.backends.routing import DeviceCost, MachineProfile, gpu_present

__all__ = ["calibrate"]


def _best(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _fit(cold: float, sizes: list[tuple[float, float]]) -> dict[str, float]:
    """Per-unit slope and fixed part from warm (work, seconds) pairs and a cold call of
    the smaller size."""
    (w1, t1), (w2, t2) = sizes
    slope = max((t2 - t1) / max(w2 - w1, 1.0), 1e-18)
    fixed = max(0.0, t1 - slope * w1) + max(0.0, cold - t1)
    return {"per_unit_s": slope, "compile_s": fixed}


def _rings(h: int, w: int, n_dyn: int) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    dq = np.clip((r / r.max() * n_dyn).astype(int) + 1, 1, n_dyn)
    sq = (dq - 1) * 4 + np.clip((r / r.max() * n_dyn * 4).astype(int) % 4, 0, 3) + 1
    return dq, sq


def _multitau(device: str, repeats: int) -> dict[str, float]:
    from xpcsviewer.compute.inputs import Partition
    from xpcsviewer.compute.multitau.correlator import correlate_multitau

    rng = np.random.default_rng(0)
    engine = "compiled" if device == "cpu" else "xla"
    out = []
    cold = None
    for side, n in ((64, 1024), (128, 2048)):
        fr = rng.poisson(1.0, (n, side, side)).astype(np.uint16)
        dq, sq = _rings(side, side, 8)

        def job(fr=fr, dq=dq, sq=sq) -> Any:
            return correlate_multitau(fr, Partition(dq, sq), engine=engine, device=device)

        if cold is None:
            cold = _best(job, 1)
        out.append((float(side * side * n), _best(job, repeats)))
    return _fit(cold, out)


def _twotime(device: str, repeats: int) -> dict[str, float]:
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute.inputs import Partition
    from xpcsviewer.compute.options import TwotimeOptions
    from xpcsviewer.compute.twotime.correlator import correlate_twotime

    rng = np.random.default_rng(1)
    be = get_backend("numpy") if device == "cpu" else get_backend("jax")
    kw: dict[str, Any] = {"engine": "auto"} if device == "cpu" else {
        "engine": "backend", "device": _jax_device(device)}
    out = []
    cold = None
    for n in (512, 1024):
        fr = rng.poisson(1.0, (n, 64, 64)).astype(np.uint16)
        dq, sq = _rings(64, 64, 4)
        pix = float((dq > 0).sum())

        def job(fr=fr, dq=dq, sq=sq) -> Any:
            return correlate_twotime(fr, Partition(dq, sq), options=TwotimeOptions(backend=be),
                                     **kw)

        if cold is None:
            cold = _best(job, 1)
        out.append((pix * n * n / 2.0, _best(job, repeats)))
    return _fit(cold, out)


def _events(n_frames: int, side: int, occupancy: float, seed: int) -> Any:
    """A synthetic photon job: hits of ``n_frames`` frames of side x side pixels, each
    pixel hit with probability ``occupancy`` per frame, in blocks of 512 frames."""
    from xpcsviewer.compute.inputs import FrameStream
    from xpcsviewer.model.events import EventBlock

    rng = np.random.default_rng(seed)
    cells = n_frames * side * side
    # hit cells drawn at once (a repeat merges: rare at these occupancies), frame order
    pos = np.unique(rng.integers(0, cells, rng.binomial(cells, occupancy)))
    frame, pixel = np.divmod(pos, side * side)
    value = rng.poisson(0.2, frame.size).astype(np.uint16) + 1
    cuts = np.searchsorted(frame, np.arange(0, n_frames + 512, 512))
    blocks = [EventBlock(a, min(a + 512, n_frames), frame[i:j].astype(np.int32),
                         pixel[i:j].astype(np.int64), value[i:j])
              for a, i, j in zip(range(0, n_frames, 512), cuts[:-1], cuts[1:], strict=False)]
    return FrameStream(lambda: iter(blocks), n_frames), int(frame.size)


def _sparse(device: str, repeats: int) -> dict[str, float]:
    """Photon jobs (multi-tau on hits of 256x256 pixels at 1 % occupancy, 1024 and 2048
    frames: 0.67 and 1.3 million hits): the numba
    engine on the CPU, the XLA photon engine on a GPU, in photon units (the path
    model's estimate / PHOTON_UNIT_S, as :func:`~xpcsviewer.jobs.correlate_plan.plan_correlate`
    counts a job)."""
    from xpcsviewer.backends.routing import PHOTON_UNIT_S
    from xpcsviewer.compute.inputs import Partition
    from xpcsviewer.compute.pipeline_sparse import estimate_costs

    # a wide detector and few frames: the path model fits within 1.5-2x in CPU time there (at
    # 64x64 x 8192 frames the numba engine took 14-21x its estimate, per-pixel levels)
    side = 256
    dq, sq = _rings(side, side, 8)
    out = []
    cold = None
    for n in (1024, 2048):
        frames, hits = _events(n, side, 0.01, n)
        units = estimate_costs(n_frames=n, detector_pixels=side * side,
                               correlated_pixels=side * side, hits=hits,
                               mode="multitau")[0] / PHOTON_UNIT_S
        if device == "cpu":
            from xpcsviewer.compute.multitau.photons import correlate_multitau_events

            def job(frames=frames) -> Any:
                return correlate_multitau_events(frames, Partition(dq, sq))
        else:
            from xpcsviewer.compute.multitau._photons_xla import correlate_events_xla

            dev = _jax_device(device)

            def job(frames=frames, dev=dev) -> Any:
                return correlate_events_xla(frames, Partition(dq, sq), device=dev)

        if cold is None:
            cold = _best(job, 1)
        out.append((units, _best(job, repeats)))
    return _fit(cold, out)


def _curves(b: int, t: int = 60) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(2)
    tau = np.geomspace(1e-5, 1.0, t)
    rate = np.geomspace(10.0, 1e4, b)[:, None]
    g2 = 1.0 + 0.2 * np.exp(-2 * rate * tau[None, :])
    err = np.full_like(g2, 2e-3)
    g2 = g2 + rng.normal(0, 2e-3, g2.shape)
    return np.broadcast_to(tau, g2.shape), g2, err


def _lsq(device: str, repeats: int) -> dict[str, float]:
    from xpcsviewer.fitting import fit_g2

    out = []
    cold = None
    for b in (36, 720):
        tau, g2, err = _curves(b)

        def job(tau=tau, g2=g2, err=err) -> Any:
            return fit_g2(tau, g2, err, model="single", device=device)

        if cold is None:
            cold = _best(job, 1)
        out.append((float(g2.size), _best(job, repeats)))
    return _fit(cold, out)


def _nuts(device: str) -> dict[str, float]:
    """NUTS cost: a part per unit of work (bins x points x draws x chains: the CPU's
    share) and a part per sequential step (draw) whatever the bins (a GPU's: one
    transition is a loop of small kernels). Measured at two bin counts and two draw
    counts: with the draws held fixed the per-step time hid in the fixed part, and an
    H200 routed a 36-curve, 1500-draw fit to the GPU (est. 11.5 s) that took 49.7 s
    there against 15.4 s on the CPU (issue 32's device session)."""
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

    chains = 2

    def job(b: int, draws: int) -> Callable[[], Any]:
        tau, g2, err = _curves(b, 40)
        spec = SamplerSpec(num_warmup=draws, num_samples=draws, num_chains=chains,
                           device=device)
        # the sampler takes one delay row
        return lambda: fit_g2_bayes(tau[0], g2, err, fit=FitSpec(model="single"),
                                    sampler=spec)

    def units(b: int, draws: int) -> float:
        return float(b * 40 * 2 * draws * chains)

    cold = _best(job(2, 100), 1)
    t1 = _best(job(2, 100), 1)
    t2 = _best(job(8, 100), 1)
    t3 = _best(job(2, 300), 1)
    per_unit = max((t2 - t1) / (units(8, 100) - units(2, 100)), 1e-18)
    steps = 2 * 300 - 2 * 100
    per_step = max((t3 - t1 - per_unit * (units(2, 300) - units(2, 100))) / steps, 0.0)
    fixed = max(0.0, t1 - per_unit * units(2, 100) - per_step * 200) + max(0.0, cold - t1)
    return {"per_unit_s": per_unit, "compile_s": fixed, "per_step_s": per_step}


def _jax_device(device: str) -> Any:
    from xpcsviewer.backends import get_backend

    get_backend("jax")
    import jax

    return jax.devices("gpu")[0] if device == "gpu" else jax.devices("cpu")[0]


def _gpu_startup() -> float:
    """Seconds a fresh process spends starting the GPU beyond starting the CPU."""
    code = ("import time; t = time.perf_counter(); import jax; jax.devices({!r}); "
            "print(time.perf_counter() - t)")

    def run(platform_: str, env: dict[str, str]) -> float:
        got = subprocess.run([sys.executable, "-c", code.format(platform_)], env=env,
                             capture_output=True, text=True, timeout=300, check=True)
        return float(got.stdout.strip().splitlines()[-1])

    env = dict(os.environ)
    cpu_env = {**env, "JAX_PLATFORMS": "cpu"}
    return max(0.0, min(run("gpu", env) for _ in range(2))
               - min(run("cpu", cpu_env) for _ in range(2)))


def _gpu_bandwidth() -> float:
    dev = _jax_device("gpu")
    import jax

    host = np.ones(128 << 20, np.uint16)  # 256 MiB
    t = _best(lambda: jax.block_until_ready(jax.device_put(host, dev)), 3)
    return host.nbytes / t


def calibrate(*, nuts: bool = True, repeats: int = 2,
              say: Callable[[str], None] = print,
              devices: tuple[str, ...] | None = None) -> MachineProfile:
    """Measure every kind on every device present; returns the profile (not saved)."""
    devs = devices if devices is not None else (("cpu", "gpu") if gpu_present() else ("cpu",))
    kinds: list[tuple[str, Callable[[str], dict[str, float]]]] = [
        ("multitau", lambda d: _multitau(d, repeats)),
        ("twotime", lambda d: _twotime(d, repeats)),
        ("sparse", lambda d: _sparse(d, repeats)),
        ("lsq", lambda d: _lsq(d, repeats)),
    ]
    if nuts:
        kinds.append(("nuts", _nuts))
    costs: dict[str, dict[str, DeviceCost]] = {}
    gpu_fixed: dict[str, float] = {}
    if "cpu" in devs:
        # an installed app has its numba kernels compiled (make's precompile step); a
        # cold cache would put ~10 s of one-time compilation into every CPU job's
        # estimate (an H200 host without it routed W1 to its GPU: 8.5 s vs 3.4 s)
        from xpcsviewer.jobs.precompile import ensure_kernels

        say("numba kernels as installed ...")

        def compiling(done: int, total: int, msg: str = "") -> None:
            # a cold cache takes minutes (over 120 s on an H200's 16-core host, one
            # group at a time): say each group as it ends, several compiling at once
            name = msg.rsplit(": ", 1)[-1]
            if done > 0 and name != "kernels compiled":
                failed = name.endswith(" FAILED")
                say(f"  {'FAILED' if failed else 'compiled'} "
                    f"{name.removesuffix(' FAILED')} ({done}/{total})")

        ensure_kernels(compiling, jobs=min(4, os.cpu_count() or 1), nice=False)
    if "gpu" in devs:
        say("GPU start-up and transfer rate ...")
        gpu_fixed = {"startup_s": _gpu_startup(), "bytes_per_s": _gpu_bandwidth()}
        say(f"  start-up {gpu_fixed['startup_s']:.2f} s, "
            f"{gpu_fixed['bytes_per_s'] / 1e9:.1f} GB/s host to device")
    for kind, measure in kinds:
        for dev in devs:
            t = time.perf_counter()
            got = measure(dev)
            extra = gpu_fixed if dev == "gpu" else {}
            costs.setdefault(kind, {})[dev] = DeviceCost(**got, **extra)
            step = f", {got['per_step_s']:.3g} s per step" if "per_step_s" in got else ""
            say(f"{kind:9s} {dev}: {got['per_unit_s']:.3g} s per unit{step}, fixed "
                f"{got['compile_s']:.2f} s  ({time.perf_counter() - t:.1f} s to measure)")
    machine = {"host": platform.node(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
               "devices": list(devs), "date": time.strftime("%Y-%m-%d %H:%M")}
    return MachineProfile(costs, "calibrated", machine)
