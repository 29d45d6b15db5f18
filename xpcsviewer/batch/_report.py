"""Command-line side of a batch: the one progress bar and the closing failure lines."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from xpcsviewer.batch._engine import BatchSummary
from xpcsviewer.progress import TextProgressBar

__all__ = ["BatchBar", "file_items", "print_failures"]


class BatchBar(TextProgressBar):
    """One bar for the whole batch: files done / total and failures."""


def file_items(paths: Sequence[str | os.PathLike], **extra: Any) -> list[dict[str, Any]]:
    """Task items: the absolute path for the worker, the given one for messages."""
    return [{"path": os.path.abspath(p), "shown": os.fspath(p), **extra} for p in paths]


def print_failures(prog: str, summary: BatchSummary, stream: TextIO | None = None) -> None:
    """One line per failed file (input order), then the count when any failed."""
    stream = stream if stream is not None else sys.stderr
    from xpcsviewer.io.errors import one_line

    for f in summary.failures:
        print(f"{prog}: {one_line(f.error)}", file=stream)
    if summary.failures:
        print(f"{prog}: {len(summary.failures)} of {summary.total} file(s) failed",
              file=stream)
