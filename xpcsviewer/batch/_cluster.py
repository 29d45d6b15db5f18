"""Where a batch runs: in-process, a LocalCluster for the job, or an existing scheduler.

Dask is imported only here and only when a cluster is asked for, so plain
commands and the GUI start as fast as without it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["SCHEDULER_ENV", "Where", "open_client", "probe_scheduler", "usable_cores",
           "where_from_args", "worker_env"]

SCHEDULER_ENV = "XPCS_SCHEDULER"


@dataclass(frozen=True)
class Where:
    """``workers`` processes of a LocalCluster, or the cluster at ``scheduler``."""

    workers: int = 1
    scheduler: str | None = None

    @property
    def distributed(self) -> bool:
        """True when the batch goes to Dask (a scheduler, or more than one worker)."""
        return bool(self.scheduler) or self.workers > 1

    def describe(self) -> str:
        """One line for messages."""
        if self.scheduler:
            return f"Dask scheduler {self.scheduler}"
        if self.workers > 1:
            return f"LocalCluster of {self.workers} worker processes"
        return "in-process"


def where_from_args(args: Any) -> Where:
    """``--workers`` / ``--scheduler`` (or ``XPCS_SCHEDULER``) of parsed arguments.

    Raises
    ------
    ValueError
        ``--workers`` below 1, or both options given.
    """
    workers = getattr(args, "workers", None)
    scheduler = getattr(args, "scheduler", None)
    if workers is not None and workers < 1:
        raise ValueError("--workers must be at least 1")
    if scheduler and workers is not None:
        raise ValueError("give --workers or --scheduler, not both")
    if not scheduler and workers is None:
        scheduler = os.environ.get(SCHEDULER_ENV) or None
    cores = usable_cores()
    if workers is not None and workers > cores:
        # More worker processes than cores only queue: 64 on 2 cores did not
        # finish in 300 s (each starts its own interpreter and JAX).
        prog = f"xpcsviewer {args.command}" if getattr(args, "command", None) else "xpcsviewer"
        print(f"{prog}: note: --workers {workers}: this machine runs {cores} processes at "
              f"once; using {cores} workers", file=sys.stderr)
        workers = cores
    return Where(workers=workers or 1, scheduler=scheduler)


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_env(n_workers: int) -> dict[str, str]:
    """Environment of LocalCluster workers: BLAS/OpenMP threads shared out.

    Each worker process runs one task at a time; its BLAS/OpenMP/Numba threads
    get ``cores // n_workers`` (at least 1) so N workers never ask for more
    threads than the machine has. XLA keeps its own default: turning its Eigen
    threading off (``--xla_cpu_multi_thread_eigen=false``) changes the last bits
    of a fit, and a batch must give the in-process run's numbers exactly.
    """
    cores = os.cpu_count() or 1
    per = max(1, cores // max(1, n_workers))
    return {k: str(per) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                  "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}


#: What a Dask scheduler sends first on a new connection: the byte count of its
#: handshake message (8 bytes, little-endian), a few hundred bytes.
_GREETING_MAX = 1 << 20


def probe_scheduler(address: str, timeout: float = 3.0) -> str | None:
    """Why ``address`` is not a Dask scheduler, or None when it greets like one.

    Only ``tcp://`` (or bare ``HOST:PORT``) addresses are probed: a plain TCP
    connection, then the first 8 bytes the server sends. A Dask scheduler sends
    its handshake at once; a web server, an echo service or anything else sends
    nothing, or bytes that read as an absurd size (distributed then tried to
    allocate 3 EiB: "not enough memory").
    """
    import socket
    import struct
    from urllib.parse import urlsplit

    if "://" not in address:
        address = f"tcp://{address}"
    parts = urlsplit(address)
    if parts.scheme != "tcp":
        return None
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        return "not a HOST:PORT address"
    if not host or port is None:
        return "not a HOST:PORT address"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        return f"cannot connect ({exc.strerror or exc})"
    with sock:
        sock.settimeout(timeout)
        got, closed = b"", False
        try:
            while len(got) < 8:
                chunk = sock.recv(8 - len(got))
                if not chunk:
                    closed = True
                    break
                got += chunk
        except OSError:
            pass
    if not got:
        return ("a service answers there but closed the connection without a Dask "
                "greeting" if closed else
                f"a service answers there but sent no Dask greeting within {timeout:g} s")
    if len(got) < 8:
        return "a service answers there but not in Dask's protocol"
    (size,) = struct.unpack("<Q", got)
    if not 0 < size <= _GREETING_MAX:
        return "a service answers there but not in Dask's protocol"
    return None


def _scheduler_failure(address: str, exc: BaseException) -> str:
    """One line for a failed connection to ``address``: unreachable, or not Dask."""
    why = probe_scheduler(address)
    if why is not None and why.startswith("a service"):
        return (f"{address} is not a Dask scheduler ({why}); give the address the "
                "scheduler printed (tcp://HOST:PORT, usually port 8786)")
    detail = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    if why is not None:
        return f"cannot reach the Dask scheduler {address} ({why})"
    return f"cannot reach the Dask scheduler {address} ({detail.rstrip(': ')})"


@contextlib.contextmanager
def open_client(where: Where) -> Iterator[Any]:
    """A ``distributed.Client`` for ``where``; a LocalCluster is closed on exit.

    The cluster is shut down also on Ctrl-C or an error. The nanny applies the
    workers' environment to this process too before spawning (Dask's
    pre-spawn-environ), so the client's environment is restored afterwards.
    """
    import dask
    from distributed import Client, LocalCluster

    quiet = logging.getLogger().getEffectiveLevel() > logging.INFO
    if quiet:
        # Worker restarts, lost comms (CommClosedError) and closing chatter are
        # Dask's business: the batch reports each file's outcome itself. Only
        # -v shows them.
        for name in ("distributed", "tornado", "asyncio", "bokeh"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    if where.scheduler:
        try:
            client = Client(where.scheduler, timeout="10s")
        except Exception as exc:  # MemoryError too: garbage read as a frame size
            raise RuntimeError(_scheduler_failure(where.scheduler, exc)) from None
        try:
            yield client
        finally:
            client.close()
        return
    saved = dict(os.environ)
    cluster = client = None
    try:
        env = worker_env(where.workers)
        if quiet:
            env["XPCS_DASK_QUIET"] = "1"  # see _worker.dask_setup
        with dask.config.set({"distributed.nanny.pre-spawn-environ": env,
                              # no dashboard and no HTTP routes: the scheduler's HTTP
                              # server binds a free loopback port and serves nothing
                              # (8787 taken printed a 3-line warning on every run)
                              "distributed.scheduler.http.routes": [],
                              "distributed.worker.http.routes": []}):
            cluster = LocalCluster(
                n_workers=where.workers, threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address=None,
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                preload=["xpcsviewer.batch._worker"],
                silence_logs=logging.CRITICAL if quiet else logging.WARNING,
            )
        client = Client(cluster)
        yield client
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        os.environ.clear()
        os.environ.update(saved)
