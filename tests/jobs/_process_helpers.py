"""Module-level job functions for tests/jobs/test_process_job.py (a spawned child
imports them by name; the test puts this folder on sys.path, which spawn passes on)."""

from __future__ import annotations

import os
import time


def add(a, b, progress=None, cancel=None):
    for k in range(3):
        if progress is not None:
            progress(k, 3, f"step {k}")
    return {"sum": a + b, "pid": os.getpid()}


def fails(message, progress=None, cancel=None):
    raise KeyError(message)


def sleeps(seconds, marker, progress=None, cancel=None):
    with open(marker, "w") as fh:
        fh.write(str(os.getpid()))
    if progress is not None:
        progress(0, 1, "sleeping")
    time.sleep(seconds)
    return "woke"


def dies(code, progress=None, cancel=None):
    os._exit(code)
