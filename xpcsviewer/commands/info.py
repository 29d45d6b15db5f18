"""``xpcsviewer info FILE... [--json]``: a summary of result files."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from xpcsviewer.io.errors import display_path
from xpcsviewer.io.model import XpcsResult
from xpcsviewer.io.outputs import to_jsonable
from xpcsviewer.io.reader import read_result

EXIT_BAD_INPUT = 3


def summary(res: XpcsResult) -> dict[str, Any]:
    """The JSON record of one file (keys as ARCHITECTURE.md §8)."""
    qm = res.qmap
    if res.intensity_vs_time is not None:
        n_frames = int(res.intensity_vs_time.shape[1])
    elif res.twotime is not None:
        n_frames = int(res.twotime.n_frames)
    else:
        n_frames = None
    mt = res.multitau
    return {
        "path": display_path(res.path),
        "analysis_type": list(res.analysis_type),
        "layout": res.layout,
        "detector_shape": list(qm.shape),
        "n_frames": n_frames,
        "frame_time": res.frame_time,
        "energy_kev": qm.energy_kev,
        "det_dist_m": qm.detector_distance,
        "pixel_size_m": qm.pixel_size,
        "beam_center": [qm.beam_center_x, qm.beam_center_y],
        "q_dynamic": [float(x) for x in qm.dynamic_q],
        "phi_dynamic": [float(x) for x in qm.dynamic_phi],
        "labels": qm.dynamic_labels(),
        "n_tau": None if mt is None else len(mt.delay_frames),
        "tau_range_s": None if mt is None else [float(mt.tau[0]), float(mt.tau[-1])],
        "missing_fraction": None if mt is None else float(1.0 - mt.valid.mean()),
        # points whose stated error is implausibly small (left out of fits by default)
        "err_suspect_count": None if mt is None or mt.err_suspect is None
        else int(mt.err_suspect.sum()),
        "err_suspect_delays_s": None if mt is None or mt.err_suspect is None
        else [round(float(mt.tau[i]), 12) for i in np.flatnonzero(mt.err_suspect.any(axis=1))],
        "twotime_bins": None
        if res.twotime is None
        else [int(b) for b in res.twotime.processed_bins],
        "start_time": res.start_time,
        "sample": {
            k: v for k, v in res.sample.items() if isinstance(v, (int, float, str))
        },
        "warnings": list(res.warnings),
    }


def _row(s: dict[str, Any]) -> list[str]:
    q = s["q_dynamic"]
    qr = f"{min(q):.4g}-{max(q):.4g}" if q else "-"
    e = s["energy_kev"]
    return [
        str(s["path"]).rsplit("/", 1)[-1],
        "+".join(s["analysis_type"]),
        "x".join(str(v) for v in s["detector_shape"]),
        "-" if s["n_frames"] is None else str(s["n_frames"]),
        f"{s['frame_time']:.3g}",
        "-" if e is None else f"{e:.4g}",
        f"{s['det_dist_m']:.4g}",
        str(len(q)),
        qr,
        "-" if s["n_tau"] is None else str(s["n_tau"]),
    ]


def summary_task(item: dict[str, Any]) -> dict[str, Any]:
    """:func:`summary` of one file, named as given (a batch task; any worker)."""
    rec = summary(read_result(item["path"]))
    rec["path"] = display_path(item["shown"])
    return rec


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer info``; exit 3 when any file was bad (good ones still shown)."""
    from xpcsviewer.batch import file_items, print_failures, run_batch, where_from_args

    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"xpcsviewer info: error: {exc}", file=sys.stderr)
        return 2
    records: list[dict[str, Any]] = []
    # no bar: the table is the output and a file takes milliseconds
    result = run_batch(summary_task, file_items(args.files),
                       lambda o: records.append(o.value) if o.ok else None, where=where)
    print_failures("xpcsviewer info", result)
    if args.json:
        out = []
        for r in records:
            count = [0]
            r = to_jsonable(r, count)
            if count[0]:
                r["warnings"].append(
                    f"{count[0]} values are NaN or Inf; written as null (JSON has no NaN)"
                )
            out.append(r)
        print(json.dumps({"files": out}, indent=2, ensure_ascii=False, allow_nan=False))
    elif records:
        head = [
            "file",
            "type",
            "detector",
            "frames",
            "frame_time_s",
            "E_keV",
            "L_m",
            "n_q",
            "q_1/A",
            "n_tau",
        ]
        rows = [head] + [_row(s) for s in records]
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for r in rows:
            print(
                "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            )
        for s in records:
            for w in s["warnings"]:
                print(f"note: {str(s['path']).rsplit('/', 1)[-1]}: {w}")
    return result.exit_code
