"""Batch commands on many files: one task per file, in-process or on Dask (Qt-free).

``correlate``, ``fit``, ``export``, ``info`` and the screening pass of ``average``
run their files through :func:`run_batch`: in-process by default, on a LocalCluster
started for the job with ``--workers N``, or on an existing cluster with
``--scheduler tcp://HOST:PORT`` (or ``XPCS_SCHEDULER``). See docs/batch.md.
"""

from xpcsviewer.batch._cluster import SCHEDULER_ENV, Where, open_client, where_from_args
from xpcsviewer.batch._engine import (
    BatchSummary,
    ItemOutcome,
    PerChunk,
    UsageError,
    outcome_of,
    relabel,
    run_batch,
    run_chunk,
)
from xpcsviewer.batch._prefetch import Prefetcher
from xpcsviewer.batch._report import BatchBar, file_items, print_failures

__all__ = [
    "SCHEDULER_ENV",
    "BatchBar",
    "BatchSummary",
    "ItemOutcome",
    "PerChunk",
    "Prefetcher",
    "UsageError",
    "Where",
    "file_items",
    "open_client",
    "outcome_of",
    "print_failures",
    "relabel",
    "run_batch",
    "run_chunk",
    "where_from_args",
]
