"""Preloaded into LocalCluster workers (``preload=[__name__]``).

A Ctrl-C at the terminal reaches the whole process group: the workers would
each print a KeyboardInterrupt traceback. The client alone handles it (it
cancels the tasks and closes the cluster), so the workers ignore SIGINT.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

#: Set by the client (``open_client``) unless ``-v``: Dask's own log lines stay out.
QUIET_ENV = "XPCS_DASK_QUIET"


def dask_setup(worker: Any) -> None:
    """Dask's preload hook: runs in each worker process at start."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.environ.get(QUIET_ENV) == "1":
        # a worker closed mid-message logs CommClosedError tracebacks; the client
        # reports each file's outcome itself
        for name in ("distributed", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
