"""``xpcsviewer device [--json]``."""

from __future__ import annotations

import argparse
import json


def run(args: argparse.Namespace) -> int:
    """Print backend, JAX version, devices, chosen device, threshold, x64, cache folder."""
    from xpcsviewer.backends import get_device_manager

    info = get_device_manager().info(getattr(args, "config", None))
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
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    for d in info["downgrades"]:
        print(f"note: {d}")
    return 0
