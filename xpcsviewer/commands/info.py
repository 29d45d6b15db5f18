"""``xpcsviewer info FILE... [--json] [--qmap QMAP] [--inspect]``: a summary of result files
and raw sources.

A raw source (dense frames or a photon-sparse / event-mode layout, told by its content:
:func:`~xpcsviewer.io.raw.raw_layout`) is described from its ``summary()``: layout,
detector shape, frames, frame time, events, occupancy, photons per frame (JSON: in
``"files"`` with ``"kind": "raw"``). ``--qmap`` gives the detector shape of layouts that
store none. Their faults take a pass over the data: ``--inspect`` adds the timelines'
summary and the findings of :func:`~xpcsviewer.jobs.inspect.inspect_source` (JSON:
``"inspection"`` with ``"findings"`` in the contract of ``xpcsviewer inspect -o``);
without it a note says how to get them.

A per-pixel G2 side file (``X_results_G2.hdf``, written beside its result file by
``correlate --save-g2-pixel`` and the demo) is described, not failed: the stack's
shape and the result file it belongs to (JSON: ``"side_files"``, beside ``"files"``).

A result file's multi-tau two-time age x lag map (``correlate --twotime-ages``; the only
two-time data of a file written with ``--mode multitau``) is named with its bins,
frames, frame time and levels: a ``note:`` line, and ``"age_lag"`` in JSON (null
without one; ``"twotime_bins"`` lists the full maps' bins). Two-time maps of pixel
groups (``correlate --twotime-groups``) likewise: a ``note:`` line and
``"twotime_groups": {n_groups, tile_px, bins}`` (null without them), and ``"age_lag_groups"``
the same for the age x lag maps of the groups.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from xpcsviewer.io.errors import display_path
from xpcsviewer.io.outputs import to_jsonable
from xpcsviewer.io.results.reader import read_result
from xpcsviewer.model.result import XpcsResult

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
        # the multi-tau two-time age x lag map (correlate --twotime-ages), alone or beside
        # the full maps: its bins, frames, frame time and levels
        "age_lag": _age_lag(res),
        # two-time maps of independent pixel groups (correlate --twotime-groups): the
        # errors of g2 by age come from them
        "twotime_groups": _groups(res.path),
        # the same for the age x lag map (correlate --twotime-ages --twotime-groups)
        "age_lag_groups": _groups(res.path, age_lag=True),
        "start_time": res.start_time,
        "sample": {
            k: v for k, v in res.sample.items() if isinstance(v, (int, float, str))
        },
        "warnings": list(res.warnings),
    }


def _age_lag(res: XpcsResult) -> dict[str, Any] | None:
    """The record of the file's age x lag map (None without one)."""
    a = getattr(res, "age_lag", None)
    if a is None:
        return None
    return {"bins": [int(b) for b in a.bins], "n_frames": int(a.n_frames),
            "frame_time_s": float(a.frame_time), "n_levels": int(a.n_levels),
            "full_map": res.twotime is not None}


def _groups(path: Any, age_lag: bool = False) -> dict[str, Any] | None:
    """The file's pixel-group maps (full maps, or with ``age_lag`` age x lag maps):
    groups, tile side and bins (None without them; ``error`` when unreadable)."""
    from xpcsviewer.io._h5 import open_h5
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.age_lag_groups import read_age_lag_groups_header
    from xpcsviewer.io.results.twotime_groups import read_twotime_groups_header

    try:
        with open_h5(path) as f:
            h = (read_age_lag_groups_header if age_lag else read_twotime_groups_header)(f)
    except (XpcsFileError, OSError) as exc:  # read by `ages`, which says the same
        return {"error": exc.one_line() if isinstance(exc, XpcsFileError) else str(exc)}
    if h is None:
        return None
    return {"n_groups": h.n_groups, "tile_px": h.tile_px, "bins": [int(b) for b in h.bins]}


def _groups_note(s: dict[str, Any], key: str = "twotime_groups") -> str | None:
    """The text line of a file's pixel-group maps (None without them); ``key``:
    "twotime_groups" (full maps) or "age_lag_groups"."""
    from xpcsviewer.views.age_lag_map import bins_text

    g = s.get(key)
    if g is None:
        return None
    name = str(s["path"]).rsplit("/", 1)[-1]
    if "error" in g:
        return f"note: {name}: {g['error']}"
    kind = "age x lag maps" if key == "age_lag_groups" else "two-time maps"
    return (f"note: {name}: {kind} of {g['n_groups']} pixel groups "
            f"({g['tile_px']}-px tiles) for bins {bins_text(g['bins'])}: the errors of g2 "
            "by age (xpcsviewer ages) come from them")


def _age_lag_note(s: dict[str, Any]) -> str | None:
    """The text line of a file's age x lag map (None without one)."""
    from types import SimpleNamespace

    from xpcsviewer.views.age_lag_map import age_lag_text

    a = s.get("age_lag")
    if a is None:
        return None
    info = SimpleNamespace(bins=a["bins"], n_frames=a["n_frames"],
                           frame_time=a["frame_time_s"], n_levels=a["n_levels"])
    where = "beside the full two-time maps" if a["full_map"] else "no full two-time map"
    return (f"note: {str(s['path']).rsplit('/', 1)[-1]}: "
            f"{age_lag_text(info, 'x')}; {where}")


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


def side_file_summary(path: str, shown: str) -> dict[str, Any] | None:
    """The record of a per-pixel G2 side file (``side_file``: True), or None if not one."""
    from xpcsviewer.io.results.g2stack import describe_g2_side_file

    d = describe_g2_side_file(path)
    if d is None:
        return None
    res = d["result_file"]
    return {
        "path": display_path(shown),
        "side_file": True,
        "kind": "per-pixel G2 side file (/G2IPIF: G2, IP, IF per delay and pixel)",
        "stack_shape": d["stack_shape"],
        "channels": d["channels"],
        "result_file": None if res is None else display_path(res),
        "linked_from_result": d["linked"],
    }


def _side_note(s: dict[str, Any]) -> str:
    t, _, h, w = (s["stack_shape"] + [0, 0, 0, 0])[:4]
    of = (f"of {s['result_file'].rsplit('/', 1)[-1]}" if s["result_file"]
          else "whose result file is not beside it")
    if s["result_file"] and not s["linked_from_result"]:
        of += " (which does not link to it)"
    return (f"note: {str(s['path']).rsplit('/', 1)[-1]}: per-pixel G2 side file {of}: "
            f"G2/IP/IF stack of {t} delays x {h} x {w} pixels; not a result file "
            "(its pixels are shown by the result file's g2pixel tab)")


def raw_summary(path: str, shown: str, shape: Any = None) -> dict[str, Any] | None:
    """The record of a raw source (``"kind": "raw"``), or None when ``path`` is not one."""
    from xpcsviewer.io.raw import open_raw_source, raw_layout

    if raw_layout(path) is None:
        return None
    shape = None if shape is None else tuple(int(v) for v in shape)
    with open_raw_source(path, shape=shape) as src:
        rec = src.summary(count_photons=True)
    rec["path"] = display_path(shown)
    rec["files"] = [display_path(f) for f in rec.get("files", [])]
    rec.setdefault("warnings", [])
    return rec


def _raw_row(s: dict[str, Any]) -> list[str]:
    def num(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    return [
        str(s["path"]).rstrip("/").rsplit("/", 1)[-1],
        s["layout"],
        "x".join(str(v) for v in s["detector_shape"]),
        str(s["n_frames"]),
        num(s["frame_time"], ".3g"),
        num(s["events"], "d"),
        num(s["occupancy"], ".3g"),
        num(s.get("photons_per_frame"), ".4g"),
    ]


def _not_rigaku(path: str) -> None:
    """A file named as Rigaku hits (``.bin``, ``.00N``) that is neither HDF5 nor hits:
    raise naming the word that is no hit (issue 50: not "not an HDF5 file" alone)."""
    import re
    from pathlib import Path

    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.raw.dense import file_kind
    from xpcsviewer.io.raw.rigaku import rigaku_verdict

    if not (re.search(r"(\.bin|\.00\d)$", str(path)) and Path(path).is_file()
            and file_kind(path) == "other"):
        return
    ok, why = rigaku_verdict(path)
    if not ok and why.startswith("word"):
        raise XpcsFileError(path, f"not an HDF5 file, nor Rigaku hit words: {why}", None,
                            "an HDF5 result file or a raw source of a known layout")


def summary_task(item: dict[str, Any]) -> dict[str, Any]:
    """:func:`summary` of one file, named as given (a batch task; any worker); a raw
    source gets :func:`raw_summary`, a G2 side file :func:`side_file_summary` instead
    of a failure."""
    from xpcsviewer.commands._info_xsvs import xsvs_beside, xsvs_summary
    from xpcsviewer.io.errors import XpcsFileError

    raw = raw_summary(item["path"], item["shown"], item.get("shape"))
    if raw is not None:
        raw["xsvs_beside"] = xsvs_beside(item["path"])
        return raw
    xsvs = xsvs_summary(item["path"], item["shown"])  # NAME_xsvs.h5 (issue 46)
    if xsvs is not None:
        return xsvs
    try:
        res = read_result(item["path"])
    except XpcsFileError:
        side = side_file_summary(item["path"], item["shown"])
        if side is None:
            _not_rigaku(item["path"])
            raise
        return side
    rec = summary(res)
    rec["path"] = display_path(item["shown"])
    rec["xsvs_beside"] = xsvs_beside(item["path"])
    return rec


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer info``; exit 3 when any file was bad (good ones still shown)."""
    from xpcsviewer.batch import file_items, print_failures, run_batch, where_from_args

    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"xpcsviewer info: error: {exc}", file=sys.stderr)
        return 2
    shape = None
    if getattr(args, "qmap", None):
        from xpcsviewer.io.errors import XpcsFileError
        from xpcsviewer.io.results.reader import read_qmap

        try:
            shape = [int(v) for v in read_qmap(args.qmap).shape]
        except XpcsFileError as exc:
            print(f"xpcsviewer info: {exc.one_line()}", file=sys.stderr)
            return EXIT_BAD_INPUT
    records: list[dict[str, Any]] = []
    # no bar: the table is the output and a file takes milliseconds
    result = run_batch(summary_task, file_items(args.files, shape=shape),
                       lambda o: records.append(o.value) if o.ok else None, where=where)
    print_failures("xpcsviewer info", result)
    from xpcsviewer.commands._info_xsvs import print_xsvs, xsvs_beside_note

    sides = [r for r in records if r.get("side_file")]
    raws = [r for r in records if r.get("kind") == "raw"]
    xsvs = [r for r in records if r.get("kind") == "xsvs"]
    records = [r for r in records
               if not r.get("side_file") and r.get("kind") not in ("raw", "xsvs")]
    code = result.exit_code
    if getattr(args, "inspect", False) and raws:
        code = max(code, _inspect_raws(raws, args))
    if args.json:
        out = []
        for r in records + raws + [{k: v for k, v in x.items() if k != "_table"}
                                    for x in xsvs]:
            count = [0]
            r = to_jsonable(r, count)
            if count[0]:
                r["warnings"].append(
                    f"{count[0]} values are NaN or Inf; written as null (JSON has no NaN)"
                )
            out.append(r)
        doc: dict[str, Any] = {"files": out}
        if sides:
            doc["side_files"] = sides
        print(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
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
            for line in (_age_lag_note(s), _groups_note(s),
                         _groups_note(s, "age_lag_groups"), xsvs_beside_note(s)):
                if line is not None:
                    print(line)
            for w in s["warnings"]:
                print(f"note: {str(s['path']).rsplit('/', 1)[-1]}: {w}")
    if raws and not args.json:
        if records:
            print()
        head = ["raw file", "layout", "detector", "frames", "frame_time_s", "events",
                "occupancy", "photons/frame"]
        rows = [head] + [_raw_row(s) for s in raws]
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        for s in raws:
            name = str(s["path"]).rstrip("/").rsplit("/", 1)[-1]
            print(f"note: {name}: {s['layout_text']}")
            if (line := xsvs_beside_note(s)) is not None:
                print(line)
            for w in s["warnings"]:
                print(f"note: {name}: {w}")
        for s in raws:
            _print_inspection(s)
        if not getattr(args, "inspect", False):
            print("note: faults (hot and dead pixels, cosmic rays, empty frames, counts at "
                  "the cap, modulations) take a pass over the data: xpcsviewer info --inspect "
                  "RAW, or xpcsviewer inspect RAW")
    if not args.json:
        for k, s in enumerate(xsvs):
            if k or records or raws:
                print()
            print_xsvs(s)
        for s in sides:
            print(_side_note(s))
    return code


def _inspect_raws(raws: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """``--inspect``: one pass over each raw source (:func:`~xpcsviewer.jobs.inspect.
    inspect_source`, with ``--qmap`` and ``--bin-time``); its timelines' summary and
    findings go into its record (``"inspection"``). Returns 3 when one could not be
    inspected (said in its record and on stderr)."""
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.jobs.inspect import inspect_source
    from xpcsviewer.jobs.raw_findings import finding_rows, timeline_summary
    from xpcsviewer.progress import TextProgressBar

    code = 0
    for r in raws:
        path = r["path"]
        try:
            with TextProgressBar("inspect", enabled=not getattr(args, "quiet", False)) as bar:
                ins = inspect_source(path, qmap=getattr(args, "qmap", None),
                                     bin_time=getattr(args, "bin_time", None), progress=bar)
        except (XpcsFileError, ValueError) as exc:
            why = exc.one_line() if isinstance(exc, XpcsFileError) else f"{path}: {exc}"
            print(f"xpcsviewer info: not inspected: {why}", file=sys.stderr)
            r["inspection"] = {"error": why}
            code = EXIT_BAD_INPUT
            continue
        r["inspection"] = {"summary": dict(timeline_summary(ins)),
                           "counter_cap": ins.counter_cap,
                           "rows": finding_rows(ins), **ins.findings_json()}
    return code


def _print_inspection(s: dict[str, Any]) -> None:
    """The timelines' summary and the findings table of a raw record (``--inspect``)."""
    ins = s.get("inspection")
    if not ins or "error" in ins:
        return
    name = str(s["path"]).rstrip("/").rsplit("/", 1)[-1]
    print(f"\n{name}: one pass over the data")
    for k, v in ins["summary"].items():
        print(f"  {k}: {v}")
    rows = ins["rows"]
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for r in rows:
            print("  " + "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True))
                  + "  " + r[-1])


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer info`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import add_batch

    add_batch(p, skip_existing=False)
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--qmap", default=None, metavar="QMAP",
                   help="partition file giving the detector shape of raw layouts that "
                        "store none (ESRF sparse, ImageD11, Timepix; docs/sparse-formats.md)")
    p.add_argument("--inspect", action="store_true",
                   help="raw sources: one pass over the data for the timelines' summary and "
                        "the faults found (as `xpcsviewer inspect`; with --qmap its q-bins)")
    p.add_argument("--bin-time", type=float, default=None, metavar="SECONDS",
                   help="with --inspect: frames of an event list (Timepix)")
