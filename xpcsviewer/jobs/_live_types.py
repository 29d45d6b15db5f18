"""What the live job takes and hands back: options, updates (their JSON events) and the
view data of an update (see :mod:`xpcsviewer.jobs.live`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.spec import CorrelateSpec, Engine, SpecError
from xpcsviewer.io.raw.live import RAW_DATASET

__all__ = ["TRACE_POINTS", "LiveOptions", "LiveUpdate", "LiveView", "fit_output_path"]

#: points of the intensity trace handed to a view (bucket means)
TRACE_POINTS = 2000


@dataclass(frozen=True)
class LiveOptions:
    """Settings of one live run.

    Attributes
    ----------
    every : float
        Seconds between partial results (written, fitted, reported).
    fit : bool
        Fit each update with the ``fit`` command's entry point.
    model : str
        The fit model (as ``fit --model``).
    frames : int or None
        Expected frames (else from the source, if it says).
    idle : float
        Seconds without a new frame after which the acquisition counts as ended.
    start_wait : float
        Seconds to wait for the first frame, from "ready" (kernels and fits loaded).
    poll : float
        Seconds between polls of the source.
    spec : CorrelateSpec
        What is correlated, as ``correlate`` says it (multi-tau; its ``frame_time``:
        seconds per frame, else from the raw file, else 1 s with a note; its
        ``normalize_frame``).
    dataset : str
        Frames inside the raw file(s).
    read_chunk : int
        Frames per read.
    engine : Engine
        The dense multi-tau engine (auto, compiled, array).
    """

    every: float = 2.0
    fit: bool = False
    model: str = "auto"
    frames: int | None = None
    idle: float = 10.0
    start_wait: float = 120.0
    poll: float = 0.2
    spec: CorrelateSpec = field(default_factory=CorrelateSpec)
    dataset: str = RAW_DATASET
    read_chunk: int = 256
    engine: Engine = Engine.AUTO

    def __post_init__(self) -> None:
        if self.spec.mode != "multitau":
            raise SpecError("live correlates multi-tau only (correlate the finished file "
                            "for two-time)")
        object.__setattr__(self, "engine", Engine.parse(self.engine))

    @property
    def frame_time(self) -> float | None:
        return self.spec.frame_time

    @property
    def normalize_frame(self) -> bool:
        return self.spec.normalize_frame


@dataclass
class LiveView:
    """What a plot of the partial result needs (NumPy, small)."""

    tau: np.ndarray
    g2: np.ndarray
    g2_err: np.ndarray
    valid: np.ndarray
    q: np.ndarray
    phi: np.ndarray
    trace_t: np.ndarray
    trace_i: np.ndarray
    fit_t: np.ndarray | None = None
    fit_curves: dict[int, np.ndarray] = field(default_factory=dict)
    #: "s", or "frames" where neither the user nor the raw file gave a frame time
    time_unit: str = "s"


@dataclass
class LiveUpdate:
    """One update: a partial result or the final one.

    ``frames``: frames correlated; ``frame_rate_hz``: frames correlated per second since
    the previous update; ``writer_rate_hz``: frames the writer completed per second over
    the same time (the final update: both averaged from the first frame seen);
    ``lag_frames``: complete frames not correlated yet at the last poll, ``lag_s`` the
    same in writer time; ``bins``: per q-bin fit (``tau_s``, ``status``, ...; empty
    without ``fit``); ``latency_s`` (final only): from the source's last modification
    when its last frame was seen to the fitted result on disk;
    ``end``: ``expected`` / ``closed`` / ``idle`` / ``stopped`` (final only);
    ``stages`` (final only): seconds from the poll that saw the last frame to the end
    detected (``end``), the last frames correlated (``read``), the result assembled
    (``result``), written (``write``) and fitted (``fit``);
    ``hits``, ``hit_rate_hz`` (a photon-sparse source only): hits correlated, and per
    second over the same time as ``frame_rate_hz``; ``problem`` (final only): what
    left the result partial although the run ended (``truncated``, ``replaced``,
    ``recreated``, ``corrupt``, ``not_closed``, ``missing_block``, ``partial_word``, ``idle``
    (an idle end without the source's own end signal); ``note`` says it), else None.
    """

    final: bool
    frames: int
    elapsed_s: float
    frame_rate_hz: float
    writer_rate_hz: float
    lag_frames: int
    lag_s: float
    output: str
    fit_output: str | None = None
    bins: list[dict[str, Any]] = field(default_factory=list)
    fit_error: str | None = None
    expected: int | None = None
    end: str | None = None
    note: str = ""
    latency_s: float | None = None
    seen_to_result_s: float | None = None
    interval_s: float | None = None
    view: LiveView | None = None
    hits: int | None = None
    hit_rate_hz: float | None = None
    stages: dict[str, float] = field(default_factory=dict)
    problem: str | None = None

    @property
    def partial(self) -> bool:
        """The result holds fewer frames than the acquisition (or may)."""
        return not self.final or self.end == "stopped" or self.problem is not None

    def to_json(self) -> dict[str, Any]:
        """The ``--json-events`` line (finite numbers or null)."""

        def num(x: Any) -> Any:
            if x is None:
                return None
            x = float(x)
            return round(x, 6) if math.isfinite(x) else None

        out: dict[str, Any] = {
            "event": "final" if self.final else "update",
            "partial": self.partial,
            "frames": self.frames, "expected_frames": self.expected,
            "elapsed_s": num(self.elapsed_s), "frame_rate_hz": num(self.frame_rate_hz),
            "writer_rate_hz": num(self.writer_rate_hz), "lag_frames": self.lag_frames,
            "lag_s": num(self.lag_s), "output": self.output,
            "interval_s": num(self.interval_s),
        }
        if self.hits is not None:
            out["hits"] = int(self.hits)
            out["hit_rate_hz"] = num(self.hit_rate_hz)
        if self.fit_output is not None or self.bins or self.fit_error:
            out["fit_output"] = self.fit_output
            out["bins"] = [{k: (num(v) if isinstance(v, float) else v) for k, v in b.items()}
                           for b in self.bins]
            if self.fit_error:
                out["fit_error"] = self.fit_error
        if self.final:
            out["end"] = self.end
            if self.problem:
                out["problem"] = self.problem
            out["latency_s"] = num(self.latency_s)
            out["seen_to_result_s"] = num(self.seen_to_result_s)
            out["stages"] = {k: num(v) for k, v in self.stages.items()}
        if self.note:
            out["note"] = self.note
        return out


def fit_output_path(output: str | os.PathLike) -> Path:
    """``OUT_fit.json`` beside ``OUT.hdf``: the fits of the live result."""
    p = Path(output)
    return p.with_name(p.stem + "_fit.json")


def _decimate(y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(index centres, bucket means) of at most ``n`` points."""
    if y.size <= n:
        return np.arange(y.size, dtype=np.float64), y.astype(np.float64)
    edges = np.linspace(0, y.size, n + 1).astype(np.int64)
    sums = np.add.reduceat(y.astype(np.float64), edges[:-1])
    cnt = np.diff(edges)
    return 0.5 * (edges[:-1] + edges[1:] - 1), sums / cnt
