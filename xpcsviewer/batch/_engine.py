"""Run one task per file, in-process or on Dask, and hand outcomes back in input order.

A task is a picklable module-level function ``task(item) -> value``. Each file's
failure comes back as a value (:class:`ItemOutcome` with ``error`` set), never as
an exception, so one bad file cannot abort the batch. Outcomes reach the caller's
``on_outcome`` on the calling thread, in the order of ``items`` (a small reorder
buffer): outputs written from them are the same bytes whichever executor ran
the tasks. At most a few chunks per worker are in flight, so the client's memory
does not grow with the number of files.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xpcsviewer.backends.config import RunConfig, current_config, use_config
from xpcsviewer.batch._cluster import Where, open_client
from xpcsviewer.io._h5links import external_allowed
from xpcsviewer.io.errors import XpcsFileError, display_path, one_line
from xpcsviewer.progress import (
    Cancelled,
    CancelToken,
    ProgressCallback,
    check_interrupted,
)

__all__ = [
    "BatchSummary",
    "ItemOutcome",
    "PerChunk",
    "UsageError",
    "outcome_of",
    "relabel",
    "run_batch",
    "run_chunk",
]

BAD_INPUT, REFUSED, ERROR = "bad_input", "refused", "error"


@dataclass
class ItemOutcome:
    """What one task gave: ``value``, or ``error`` (one line) of kind ``kind``."""

    index: int
    value: Any = None
    error: str | None = None
    kind: str = ""

    @property
    def ok(self) -> bool:
        """True when the task returned a value."""
        return self.error is None


@dataclass
class BatchSummary:
    """Counts and the failures' lines (in input order) of a finished batch."""

    total: int = 0
    done: int = 0
    failures: list[ItemOutcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """0 all good; 2 a refused output; 3 bad input; 1 other errors."""
        kinds = {f.kind for f in self.failures}
        if not kinds:
            return 0
        if REFUSED in kinds:
            return 2
        return 3 if BAD_INPUT in kinds else 1


class UsageError(ValueError):
    """Options that cannot apply to a file (``fit --q-range`` selecting no q-bin):
    reported per file, exit 2."""


def _one(task: Callable[[Any], Any], index: int, item: Any) -> ItemOutcome:
    from xpcsviewer.io.outputs import OutputRefusedError, OutputWriteError

    try:
        return ItemOutcome(index, value=task(item))
    except XpcsFileError as exc:
        return ItemOutcome(index, error=exc.one_line(), kind=BAD_INPUT)
    except (OutputRefusedError, UsageError) as exc:
        return ItemOutcome(index, error=one_line(str(exc)), kind=REFUSED)
    except (Cancelled, KeyboardInterrupt):
        raise
    except OutputWriteError as exc:  # a full disk: not the input's fault
        return ItemOutcome(index, error=one_line(str(exc)), kind=ERROR)
    except OSError as exc:  # unreadable, missing, permissions: bad input as in the reader
        return ItemOutcome(index, error=one_line(display_path(str(exc))), kind=BAD_INPUT)
    except Exception as exc:  # reported per file, the batch goes on
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ItemOutcome(index, error=f"{type(exc).__name__}: {display_path(text)}",
                           kind=ERROR)


class PerChunk:
    """A task that takes a whole chunk: ``fn(items) -> [ItemOutcome, ...]`` (one per item).

    For work that is cheaper done for several files at once (one batched fit
    solve). Such a batch always runs in chunks of the same fixed size, in-process
    and on Dask alike, so a chunk holds the same files wherever it runs.
    """

    def __init__(self, fn: Callable[[list[Any]], list[ItemOutcome]], size: int) -> None:
        self.fn = fn
        self.size = size


def outcome_of(fn: Callable[[Any], Any], item: Any) -> ItemOutcome:
    """``fn(item)`` as an outcome (index 0): a failure becomes a value, by kind."""
    return _one(fn, 0, item)


def run_chunk(task: Callable[[Any], Any] | PerChunk,
              chunk: Sequence[tuple[int, Any]],
              config: RunConfig | None = None,
              allow_external: bool | None = None) -> list[ItemOutcome]:
    """Run ``task`` on each ``(index, item)`` under the client's run configuration
    (``config``, shipped with the chunk) and its ``--allow-external`` (None: the
    worker's own); the unit shipped to a Dask worker."""
    from xpcsviewer.io._h5links import allowing_external

    with use_config(config), (contextlib.nullcontext() if allow_external is None
                              else allowing_external(allow_external)):
        return _run_chunk(task, chunk)


def _run_chunk(task: Callable[[Any], Any] | PerChunk,
               chunk: Sequence[tuple[int, Any]]) -> list[ItemOutcome]:
    if not isinstance(task, PerChunk):
        return [_one(task, i, item) for i, item in chunk]
    whole = _one(task.fn, 0, [item for _, item in chunk])
    if not whole.ok:  # the chunk as a whole failed: each of its files says why
        return [ItemOutcome(i, error=f"{_label(item)}: {whole.error}", kind=whole.kind)
                for i, item in chunk]
    outs = whole.value
    for (i, _), out in zip(chunk, outs, strict=True):
        out.index = i
    return outs


def _chunk_size(n: int, n_workers: int, chunk: int | None) -> int:
    if chunk is not None:
        return max(1, int(chunk))
    # Bigger tasks amortise the scheduler's per-task cost; keep >= 8 per worker
    # so the load still balances and a lost worker re-runs little.
    return max(1, min(16, n // max(1, 8 * n_workers)))


def run_batch(
    task: Callable[[Any], Any],
    items: Sequence[Any],
    on_outcome: Callable[[ItemOutcome], None],
    *,
    where: Where | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    chunk: int | None = None,
) -> BatchSummary:
    """Run ``task`` over ``items``; ``on_outcome`` gets each outcome in input order.

    Parameters
    ----------
    task : callable
        Module-level (picklable) ``task(item) -> value``; a value should be
        small (a record, a path): the outputs themselves are written by the task.
    items : sequence
        Picklable task arguments, one per file.
    on_outcome : callable
        Called on this thread with every :class:`ItemOutcome`, in input order.
    where : Where, optional
        In-process (default), a LocalCluster of ``workers`` or a scheduler.
    progress : callable, optional
        ``progress(done, total, "D/T files, F failed")``.
    cancel : CancelToken, optional
        Checked between outcomes (Ctrl-C too); pending tasks are cancelled.
    chunk : int, optional
        Files per Dask task (default: from the batch size); a :class:`PerChunk`
        task always uses its own size, in-process too.

    Raises
    ------
    Cancelled, KeyboardInterrupt
        After the pending tasks were cancelled.
    """
    where = where or Where()
    summary = BatchSummary(total=len(items))
    t0 = time.perf_counter()

    def take(out: ItemOutcome) -> None:
        summary.done += 1
        if not out.ok:
            out.error = relabel(out.error, items[out.index])
            summary.failures.append(out)
        on_outcome(out)
        if progress is not None:
            progress(summary.done, summary.total,
                     f"{summary.done}/{summary.total} files, {len(summary.failures)} failed")

    def check() -> None:
        check_interrupted()
        if cancel is not None:
            cancel.raise_if_cancelled()

    if progress is not None:
        progress(0, summary.total, f"0/{summary.total} files")
    if isinstance(task, PerChunk):
        chunk = task.size
    if not where.distributed:
        step = chunk if isinstance(task, PerChunk) else 1
        for k in range(0, len(items), step):
            check()
            for out in run_chunk(task, [(i, items[i]) for i in range(k, min(k + step,
                                                                           len(items)))]):
                take(out)
    else:
        _run_dask(task, items, take, check, where, chunk)
    summary.seconds = time.perf_counter() - t0
    return summary


def _run_dask(task, items, take, check, where: Where, chunk: int | None) -> None:
    with open_client(where) as client:
        run_on_client(client, task, items, take, check, chunk)


def run_on_client(client: Any, task, items, take, check, chunk: int | None) -> None:
    """The Dask loop on a connected ``distributed.Client`` (see :func:`run_batch`)."""
    from distributed import wait

    config = current_config()  # the workers run each chunk under the client's
    allow = external_allowed()  # and its --allow-external
    n_workers = max(1, sum(client.nthreads().values()))
    size = _chunk_size(len(items), n_workers, chunk)
    indexed = list(enumerate(items))
    chunks = [indexed[k: k + size] for k in range(0, len(indexed), size)]
    tag = uuid.uuid4().hex[:8]
    window = 4 * n_workers  # chunks submitted but not yet handed on
    ready: dict[int, list[ItemOutcome]] = {}
    pending: dict[Any, int] = {}
    next_submit = next_emit = 0

    def submit_more() -> None:
        nonlocal next_submit
        while next_submit < len(chunks) and next_submit - next_emit < window:
            fut = client.submit(run_chunk, task, chunks[next_submit], config, allow,
                                pure=False, key=f"xpcs-batch-{tag}-{next_submit}")
            pending[fut] = next_submit
            next_submit += 1

    try:
        submit_more()
        while next_emit < len(chunks):
            check()
            try:  # wake up now and then for Ctrl-C and the cancel button
                done, _ = wait(list(pending), timeout=0.25, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue
            for fut in done:
                k = pending.pop(fut)
                try:
                    ready[k] = fut.result()
                except Exception as exc:  # e.g. KilledWorker
                    why = f"worker lost ({type(exc).__name__})"
                    ready[k] = [ItemOutcome(i, error=f"{_label(it)}: {why}", kind=ERROR)
                                for i, it in chunks[k]]
                fut.release()
            while next_emit in ready:
                for out in ready.pop(next_emit):
                    take(out)
                next_emit += 1
            submit_more()
    finally:
        if pending:
            client.cancel(list(pending))


def relabel(message: str, item: Any) -> str:
    """``message`` with the task's absolute path shown as the user gave it.

    Tasks get absolute paths (a worker's folder is not the client's); messages
    name the file as on the command line, as the in-process run always did.
    """
    if isinstance(item, dict) and item.get("path") and item.get("shown"):
        full, shown = one_line(display_path(item["path"])), one_line(display_path(item["shown"]))
        if full != shown:
            message = message.replace(full, shown)
    return message


def _label(item: Any) -> str:
    if isinstance(item, dict):
        item = item.get("shown") or item.get("path") or item
    return display_path(str(item))
