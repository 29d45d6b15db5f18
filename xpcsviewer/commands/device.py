"""``xpcsviewer device [--json]``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

#: the issue-31 workloads: kind, work, bytes moved, sequential steps
WORKLOADS = {
    "W1 multi-tau 256x256x10k": ("multitau", 256 * 256 * 1e4, 256 * 256 * 1e4 * 2, 0.0),
    "W1L multi-tau 512x512x10k": ("multitau", 512 * 512 * 1e4, 512 * 512 * 1e4 * 2, 0.0),
    "W2 two-time 128x128x4k": ("twotime", 128 * 128 * 4e3 ** 2 / 2, 128 * 128 * 4e3 * 2,
                               0.0),
    "W4 fit 100 files": ("lsq", 100 * 36 * 60.0, 100 * 36 * 60 * 24.0, 0.0),
    # fit --bayes: 4 chains x (500 warm-up + 1000 draws)
    "W5 NUTS 36 curves": ("nuts", 36 * 60 * 1500 * 4.0, 36 * 60 * 24.0, 1500.0),
    # issue 30's photon job, 6.55e7 hits: photon units = the path model's 3.79 s / 1 ns
    # (tests/backends/test_routing_photons.py checks the figure)
    "W6 photons 256x256x200k 0.5%": ("sparse", 3.7914e9, 256 * 256 * 2e5 * 0.005 * 16,
                                      0.0),
}


def _example_routes(prof: Any, accelerators: Any = None) -> dict[str, str]:
    from xpcsviewer.backends.routing import route

    out = {}
    for name, (kind, work, nbytes, steps) in WORKLOADS.items():
        r = route(kind, work=work, nbytes=nbytes, steps=steps, requested="auto", profile=prof,
                  accelerators=accelerators)
        out[name] = f"{r.device} ({r.reason})"
    return out


def _calibrate(args: argparse.Namespace, path: Path) -> int:
    from xpcsviewer.backends.routing import save_profile
    from xpcsviewer.jobs.calibrate import calibrate

    prof = calibrate(nuts=not args.no_nuts)
    where = save_profile(prof, path)
    if args.json:
        print(json.dumps(prof.to_json(), indent=2))
    else:
        print(f"wrote {where}")
        for name, r in _example_routes(prof).items():
            print(f"  {name}: {r}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Print backend, JAX version, devices, chosen device, threshold, x64, cache folder."""
    from xpcsviewer.backends import get_device_manager
    from xpcsviewer.backends.routing import load_profile, profile_path

    path = Path(args.profile) if getattr(args, "profile", None) else profile_path()
    if getattr(args, "calibrate", False):
        return _calibrate(args, path)
    info = get_device_manager().info(getattr(args, "config", None))
    prof = load_profile(path)
    info["profile"] = {"path": str(path), "source": prof.source,
                       "routes": _example_routes(prof),
                       "routes_with_a_gpu": _example_routes(prof, accelerators=True)}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    rows = [
        ("backend", info["description"]),
        ("choice", info["choice"]),
        ("JAX version", info["jax_version"] or "not in use"),
        ("devices", ", ".join(info["devices"]) or "host (NumPy)"),
        ("chosen device", info["chosen_device"]),
        ("routing threshold", f"{info['routing_threshold']:,} (work score)"),
        ("float64 (x64)", "on" if info["x64"] else "OFF"),
        ("compilation cache", info["cache_dir"] or "off"),
    ]
    if info["jax_platforms"]:
        rows.append(("JAX_PLATFORMS", info["jax_platforms"]))
    rows.append(("job-cost profile", f"{info['profile']['source']} ({path})"))
    for name, r in info["profile"]["routes"].items():
        rows.append((f"  route {name}", r))
    for name, r in info["profile"]["routes_with_a_gpu"].items():
        rows.append((f"  with a GPU: {name}", r))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    for d in info["downgrades"]:
        print(f"note: {d}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer device`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--calibrate", action="store_true",
                   help="measure this machine's job costs per kind and device (about a "
                        "minute on the CPU) and write the profile that routes jobs")
    p.add_argument("--no-nuts", action="store_true",
                   help="with --calibrate: skip the Bayesian (NUTS) rows")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="profile file (default: XPCS_DEVICE_PROFILE or "
                        "~/.cache/xpcsviewer/device-profile.json)")
