"""The pixel audit of result files: read the per-pixel stack one delay at a time,
score every pixel (:mod:`xpcsviewer.compute.detector.pixel_audit`), compare repeats, write the
ranked table. Shared by ``xpcsviewer audit``, the G2-pixel tab and the report."""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.detector.pixel_audit import (
    AuditOptions,
    PixelAudit,
    audit_pixels,
    audit_table_rows,
    with_repeats,
)
from xpcsviewer.jobs._g2_stack import STACK
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["audit_file", "audit_files", "raw_rows", "write_audit_csv"]


def audit_file(
    path: str | Path,
    mask: np.ndarray | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    **options: Any,
) -> PixelAudit:
    """Audit one result file's per-pixel G2 stack with its own partition.

    Parameters
    ----------
    path : path
        A multi-tau result file written with ``--save-g2-pixel``.
    mask : (H, W) bool, optional
        Extra valid pixels (True = keep), e.g. the mask editor's.
    options :
        Passed to :func:`~xpcsviewer.compute.detector.pixel_audit.audit_pixels`.

    Raises
    ------
    XpcsFileError
        No stack, a stack of another shape, or non-finite values in it.
    """
    from xpcsviewer.compute.detector.partition import restrict_partition
    from xpcsviewer.compute.detector.regroup import correlated_pixels
    from xpcsviewer.io import read_result
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.jobs._g2_stack import checked_stack_reader

    src = read_result(path)
    mt = src.multitau
    if mt is None or not mt.has_unnormalized_G2:
        raise XpcsFileError(path, "no per-pixel G2 stack to audit", dataset=STACK,
                            expected="a file written with --save-g2-pixel")
    qm = src.qmap
    if mask is not None:
        qm = restrict_partition(qm, np.asarray(mask, dtype=bool))
    read = checked_stack_reader(path, src.qmap.shape, correlated_pixels(src.qmap))

    try:
        return audit_pixels(read, qm, n_delays=int(mt.delay_frames.size),
                            correlated=correlated_pixels(src.qmap),
                            options=AuditOptions(label=Path(path).name, **options),
                            progress=progress, cancel=cancel)
    except ValueError as exc:
        raise XpcsFileError(path, str(exc), dataset=STACK,
                            expected="finite G2, IP, IF inside the file's q-bins") from None


def audit_files(
    paths: Sequence[str | Path],
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    **options: Any,
) -> list[PixelAudit]:
    """Audit several files; with 3 or more of one detector, also against each other
    (repeats of one run: :func:`~xpcsviewer.compute.detector.pixel_audit.with_repeats`)."""
    out = []
    n = len(paths)
    for i, p in enumerate(paths):
        def prog(done: int, total: int, msg: str, i: int = i, name: str = Path(p).name
                 ) -> None:
            if progress is not None:
                progress(i * total + done, n * max(total, 1), f"{name}: {msg}")

        out.append(audit_file(p, progress=prog, cancel=cancel, **options))
    return with_repeats(out)


def raw_rows(audit: PixelAudit, inspection: Any) -> list[list[Any]]:
    """Rows (as :func:`audit_table_rows`, no header) of the pixels the raw data's fault
    finder flags (:data:`~xpcsviewer.jobs.raw_findings.PIXEL_KINDS`: hot, dead, at the
    cap): the audit's bin, q, leverage and z where it scored the pixel, and ``reason``
    ``raw <kind>: <detail>``."""
    from xpcsviewer.compute.detector.pixel_audit import audit_table_rows
    from xpcsviewer.jobs.raw_findings import pixel_findings

    w = int(audit.shape[1])
    where = {int(p): i for i, p in enumerate(audit.pixel_index)}
    scored = {int(r[2]) * w + int(r[3]): r for r in audit_table_rows(audit)[1:]}
    out = []
    for r, c, kind, detail in pixel_findings(inspection):
        row = scored.get(r * w + c)
        if row is None or (r * w + c) not in where:
            out.append([audit.label, None, r, c, None, None, None, f"raw {kind}: {detail}"])
            continue
        why = f"raw {kind}: {detail}" + (f"; {row[7]}" if row[7] else "")
        out.append([*row[:7], why])
    return out


def write_audit_csv(path: str | os.PathLike, audits: Sequence[PixelAudit],
                    top: int | None = None, raw: Sequence[Any] | None = None) -> Path:
    """The ranked table of every audit (``top`` rows each), written atomically; ``raw``
    (one :class:`~xpcsviewer.model.raw_inspect.RawInspection` or None per audit) adds
    the rows of the pixels its findings flag (:func:`raw_rows`) after each audit's.
    The last column, ``flagged``, is the audit's verdict: ``yes``/``no``, or ``raw``
    for a row the raw data's fault finder adds."""
    from xpcsviewer.compute.detector.pixel_audit import ranked
    from xpcsviewer.io.outputs import atomic_path

    rows: list[list[Any]] = []
    for k, a in enumerate(audits):
        r = audit_table_rows(a, top=top)
        # issue 49: a ``flagged`` column, the audit's own verdict (the reason alone
        # does not say it: "only pixel of its bin" is a note, not a flag)
        order = ranked(a)[: len(r) - 1]
        flags = ["yes" if f else "no" for f in np.asarray(a.flagged)[order]]
        body = [[*row, f] for row, f in zip(r[1:], flags, strict=True)]
        rows.extend(([[*r[0], "flagged"]] if not rows else []) + body)
        ins = raw[k] if raw is not None else None
        if ins is not None:
            rows.extend([*row, "raw"] for row in raw_rows(a, ins))

    def write(fh: Any) -> None:
        w = csv.writer(fh)
        for row in rows:
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v)
                        for v in row])

    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", errors="replace",
                                        newline="") as fh:
        write(fh)
    return path
