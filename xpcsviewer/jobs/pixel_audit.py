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

__all__ = ["audit_file", "audit_files", "write_audit_csv"]


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


def write_audit_csv(path: str | os.PathLike, audits: Sequence[PixelAudit],
                    top: int | None = None) -> Path:
    """The ranked table of every audit (``top`` rows each), written atomically."""
    from xpcsviewer.io.outputs import atomic_path

    rows: list[list[Any]] = []
    for a in audits:
        r = audit_table_rows(a, top=top)
        rows.extend(r if not rows else r[1:])

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
