"""The raw-data findings where a user reads them (issue 45): a result's own raw source
found and inspected for the report and the pixel audit, and the findings as table rows.

A result file records the raw source it was correlated from (its config's ``raw``, or
``/xpcs/rawdata_path``); :func:`result_raw_path` finds it where it was, or beside the
result (the same name in the result's folder or its ``raw/`` folder: a folder that was
moved or copied). :func:`inspect_for_result` runs
:func:`~xpcsviewer.jobs.inspect.inspect_source` on it with the result's q-map, frame time
and Timepix bin time. One pass over the raw data: callers run it in a worker (the report's
per-file processes, the audit command).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["PIXEL_KINDS", "finding_rows", "inspect_for_result", "pixel_findings",
           "result_raw_path", "timeline_summary"]

#: the kinds whose pixels go into the pixel audit
PIXEL_KINDS = ("hot_pixel", "dead_pixel", "at_cap")
#: header of :func:`finding_rows`
FINDING_HEADER = ("kind", "frames", "pixels", "frequency (Hz)", "q-bin", "detail")


def _config(res: Any) -> dict[str, Any]:
    for group in (res.multitau, res.twotime):
        if group is not None and group.config:
            return dict(group.config)
    return {}


def _recorded(res: Any) -> str | None:
    raw = _config(res).get("raw") or res.metadata.get("xpcs/rawdata_path")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return str(raw) if raw else None


def result_raw_path(res: Any) -> tuple[Path | None, str]:
    """(the reachable raw source of a result, or None; what was looked for).

    ``res`` is an :class:`~xpcsviewer.model.result.XpcsResult`. The recorded path, else
    the same file name beside the result or in its ``raw/`` folder.
    """
    raw = _recorded(res)
    if raw is None:
        return None, "the result records no raw source"
    rec = Path(raw)
    here = Path(res.path).parent
    for cand in (rec, here / rec.name, here / "raw" / rec.name):
        if cand.exists():
            return cand, str(rec)
    return None, f"its raw source {rec} is not reachable (nor beside the result)"


def inspect_for_result(result: str | os.PathLike | Any, raw: str | os.PathLike | None = None,
                       *, progress: ProgressCallback | None = None,
                       cancel: CancelToken | None = None) -> tuple[Any, str]:
    """(:class:`~xpcsviewer.model.raw_inspect.RawInspection` or None, a line saying what
    was inspected or why nothing was).

    ``raw``: the raw source to inspect (default: the result's own,
    :func:`result_raw_path`). The result's q-map is used when its shape is the source's;
    its frame time, and the Timepix bin time its config records.
    """
    from xpcsviewer.io import read_result
    from xpcsviewer.jobs.inspect import inspect_source

    res = read_result(result) if isinstance(result, (str, os.PathLike)) else result
    if raw is None:
        path, why = result_raw_path(res)
        if path is None:
            return None, why
    else:
        path = Path(raw)
    cfg = _config(res)
    bin_time = cfg.get("bin_time")
    kw: dict[str, Any] = {"frame_time": res.frame_time if res.frame_time > 0 else None,
                          "bin_time": float(bin_time) if bin_time else None}
    from xpcsviewer.io.errors import XpcsFileError

    try:
        ins = inspect_source(path, qmap=res.qmap, progress=progress, cancel=cancel, **kw)
    except XpcsFileError as exc:
        if "but the q-map is" not in str(exc):
            raise
        # a raw source of another detector than the result's q-map (given by hand):
        # its timelines without q-bins
        ins = inspect_source(path, progress=progress, cancel=cancel, **kw)
    return ins, f"{path} ({ins.layout}, {ins.n_frames} frames)"


def timeline_summary(ins: Any) -> list[tuple[str, str]]:
    """(name, text) rows of an inspection's timelines: what a report or ``info`` says."""
    ph = np.asarray(ins.photons, dtype=np.float64)
    occ = np.asarray(ins.occupancy, dtype=np.float64)
    cap = np.asarray(ins.cap_fraction, dtype=np.float64)
    ft = ins.frame_time
    rows = [("source", f"{ins.path} ({ins.layout}, {ins.detector_shape[0]} x "
                       f"{ins.detector_shape[1]} pixels)"),
            ("frames", f"{ins.n_frames}" + (f" of {ft:.4g} s ({ins.n_frames * ft:.4g} s)"
                                            if ft else " (frame time unknown)")),
            ("photons per frame", f"mean {ph.mean():.4g}, min {ph.min():.4g}, max {ph.max():.4g}"
                                  if ph.size else "none"),
            ("occupancy", f"mean {100 * occ.mean():.3g} % of {ins.n_valid} valid pixels"
                          if occ.size else "none")]
    if ins.counter_cap is not None:
        rows.append(("counter cap", f"{ins.counter_cap} counts: at most {100 * cap.max():.3g} % "
                                    "of the hit pixels of a frame at it" if cap.size else
                     f"{ins.counter_cap} counts"))
    kinds: dict[str, int] = {}
    for f in ins.findings:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    rows.append(("findings", ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none"))
    return rows


def _pixels_text(pixels: Any, most: int = 6) -> str:
    px = [f"({int(r)}, {int(c)})" for r, c in pixels]
    if not px:
        return "\u2013"
    return " ".join(px[:most]) + (f" \u2026 ({len(px)} pixels)" if len(px) > most else "")


def finding_rows(ins: Any, top: int | None = None) -> list[list[str]]:
    """The findings table (header :data:`FINDING_HEADER` first), by the finders' score."""
    found = sorted(ins.findings, key=lambda f: -float(f.score))
    if top is not None:
        found = found[: max(int(top), 0)]
    rows = [list(FINDING_HEADER)]
    for f in found:
        a, b = f.frames
        rows.append([f.kind, f"{a}" if a == b else f"{a}\u2013{b}", _pixels_text(f.pixels),
                     "\u2013" if f.frequency_hz is None else f"{f.frequency_hz:.2f}",
                     "\u2013" if f.q_bin is None else str(f.q_bin), f.detail])
    return rows


def pixel_findings(ins: Any, kinds: tuple[str, ...] = PIXEL_KINDS
                   ) -> list[tuple[int, int, str, str]]:
    """(row, col, kind, detail) of every pixel of the findings of ``kinds`` (a pixel in
    two findings is listed twice, once per kind)."""
    out = []
    for f in ins.findings:
        if f.kind in kinds:
            out.extend((int(r), int(c), f.kind, f.detail) for r, c in f.pixels)
    return out
