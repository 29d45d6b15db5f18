"""One NumPyro trace at a time in this process.

NumPyro keeps its effect-handler stack in a module global
(``numpyro.primitives._PYRO_STACK``): two models traced at once in two threads push
their handlers onto the same list and record each other's sample sites ("all sites
must have unique names but got `contrast` duplicated"), or silently mix them. Every
call of ours that may trace a model (building, compiling or running a sampler step,
post-processing draws) therefore runs under :func:`hold`. Compiled steps run without
tracing, so the lock is taken per step (one block of draws), and a waiting fit gets in
between two steps of another.

Background work (the start-up warm-up) runs inside :func:`background`: it never makes a
user's fit wait longer than its current step. While a foreground fit waits or runs, its
next :func:`hold` raises :class:`Yielded` instead of taking the lock. A foreground fit
that has to wait says so through its progress callback ("waiting for the sampler
warm-up…") and stays cancellable. Qt-free, imports no JAX.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from xpcsviewer.progress import Cancelled, CancelToken, ProgressCallback

__all__ = ["Yielded", "background", "hold", "holder", "is_held"]


class Yielded(Cancelled):
    """Background sampler work gave way to a user's fit."""


_cond = threading.Condition()
_owner: int | None = None
_depth = 0
_owner_label = ""
_owner_background = False
_waiting: list[int] = []  # foreground waiters, first come first served
_local = threading.local()

#: How often a waiting fit checks its cancel token (s).
_POLL_S = 0.1


@contextlib.contextmanager
def background(label: str = "the sampler warm-up") -> Iterator[None]:
    """Mark this thread's sampler work as background work named ``label``."""
    old = getattr(_local, "background", None)
    _local.background = label
    try:
        yield
    finally:
        _local.background = old


def holder() -> str:
    """What holds the lock now ("" when free)."""
    with _cond:
        return _owner_label if _owner is not None else ""


def is_held() -> bool:
    """True when the calling thread holds the lock."""
    with _cond:
        return _owner == threading.get_ident()


def _take(me: int, label: str, bg: bool) -> None:
    global _owner, _depth, _owner_label, _owner_background
    _owner, _depth, _owner_label, _owner_background = me, 1, label, bg


@contextlib.contextmanager
def hold(progress: ProgressCallback | None = None,
         cancel: CancelToken | None = None) -> Iterator[None]:
    """Run the block as the only NumPyro trace of the process (re-entrant).

    A foreground caller that finds the lock taken reports "waiting for …" once through
    ``progress`` and waits its turn, raising :class:`Cancelled` when ``cancel`` fires;
    a background caller raises :class:`Yielded` while a foreground fit waits or runs.
    """
    global _owner, _depth
    me = threading.get_ident()
    bg_label = getattr(_local, "background", None)
    with _cond:
        if _owner == me:
            _depth += 1
            acquired = True
        else:
            acquired = False
    if not acquired:
        if bg_label is not None:
            _acquire_background(me, bg_label, cancel)
        else:
            _acquire_foreground(me, progress, cancel)
    try:
        yield
    finally:
        with _cond:
            _depth -= 1
            if _depth == 0:
                _owner = None
                _cond.notify_all()


def _acquire_background(me: int, label: str, cancel: CancelToken | None) -> None:
    with _cond:
        while True:
            if _waiting or (_owner is not None and not _owner_background):
                raise Yielded()
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            if _owner is None:
                _take(me, label, True)
                return
            _cond.wait(_POLL_S)


def _acquire_foreground(me: int, progress: ProgressCallback | None,
                        cancel: CancelToken | None) -> None:
    told = ""
    with _cond:
        _waiting.append(me)
    try:
        while True:
            with _cond:
                if _owner is None and _waiting[0] == me:
                    _take(me, "another Bayesian fit", False)
                    return
                busy = _owner_label if _owner is not None else "another Bayesian fit"
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            if busy != told and progress is not None:
                # outside the condition: a callback must not run under our lock
                progress(0, 1, f"waiting for {busy}\u2026")
                told = busy
            with _cond:
                if not (_owner is None and _waiting[0] == me):
                    _cond.wait(_POLL_S)
    finally:
        with _cond:
            _waiting.remove(me)
            _cond.notify_all()
