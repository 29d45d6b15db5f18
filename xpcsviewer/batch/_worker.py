"""Preloaded into LocalCluster workers (``preload=[__name__]``).

A Ctrl-C at the terminal reaches the whole process group: the workers would
each print a KeyboardInterrupt traceback. The client alone handles it (it
cancels the tasks and closes the cluster), so the workers ignore SIGINT.
"""

from __future__ import annotations

import signal
from typing import Any


def dask_setup(worker: Any) -> None:
    """Dask's preload hook: runs in each worker process at start."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
