"""What a correlation computes, as one checked value (issue 44).

A :class:`CorrelateSpec` is made before any file is opened: every setting is checked
here, once, and the command line, the batch, ``live`` and the window build the same
value. How a job runs (path, engine, device) is not part of it: that is the plan's
(:mod:`xpcsviewer.jobs.correlate_plan`), from a :class:`PlanRequest`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

__all__ = ["AGES_DEFAULT_POINTS", "MODES", "CorrelateSpec", "Engine", "FrameSelection",
           "PlanRequest", "SpecError", "frame_ranges_text", "parse_bin_text", "parse_bins",
           "parse_frame_ranges"]

MODES = ("multitau", "twotime", "both")
#: points per level of ``--twotime-ages`` (m: level 0 has lags 0..2m-1 frames)
AGES_DEFAULT_POINTS = 8
#: the pixel-group tile side when none is given
GROUP_TILE_DEFAULT = 8


class SpecError(ValueError):
    """A setting that cannot run, said before any file is read (exit 2 on the command
    line); the text is the whole message, naming the flag."""


class Engine(StrEnum):
    """The one engine vocabulary of the correlators.

    ``auto``: decided by the plan; ``compiled``: the compiled CPU kernels (numba, BLAS);
    ``xla``: one XLA program per job on the plan's device; ``array``: the backend's
    array kernels (NumPy, or JAX ops). The older words are aliases (:meth:`parse`).
    """

    AUTO = "auto"
    COMPILED = "compiled"
    XLA = "xla"
    ARRAY = "array"

    @classmethod
    def parse(cls, word: str | Engine) -> Engine:
        """The engine a word names (``numba`` -> compiled; ``backend``, ``numpy``,
        ``blas`` -> array).

        Raises
        ------
        SpecError
            A word of no engine.
        """
        if isinstance(word, Engine):
            return word
        w = str(word).strip().lower()
        w = _ALIASES.get(w, w)
        try:
            return cls(w)
        except ValueError:
            words = ", ".join(e.value for e in cls)
            raise SpecError(f"engine must be one of {words}, got {word!r}") from None


_ALIASES = {"numba": "compiled", "backend": "array", "numpy": "array", "blas": "array"}


def parse_frame_ranges(text: str | Sequence[Sequence[int]] | None
                       ) -> tuple[tuple[int, int], ...]:
    """Frame blocks ``((first, last), ...)`` (0-based, inclusive) from ``"A-B,C"`` or
    pairs, sorted, with overlapping or touching blocks merged; ``()`` for none.

    Raises
    ------
    SpecError
        Malformed text, a negative frame, or a block whose last frame precedes its first.
    """
    if text is None:
        return ()
    pairs: list[tuple[int, int]] = []
    if isinstance(text, str):
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part:
                    a, b = (int(v) for v in part.split("-", 1))
                else:
                    a = b = int(part)
            except ValueError:
                raise SpecError(f"--exclude-frames: bad frame block {part!r} (expected "
                                "e.g. 100-149,800)") from None
            pairs.append((a, b))
    else:
        for item in text:
            try:
                a, b = (int(v) for v in item)
            except (TypeError, ValueError):
                raise SpecError(f"--exclude-frames: bad frame block {item!r} (expected "
                                "a (first, last) pair)") from None
            pairs.append((a, b))
    for a, b in pairs:
        if a < 0 or b < a:
            raise SpecError(f"--exclude-frames: block {a}-{b} must have 0 <= first <= "
                            "last (0-based raw frames, inclusive)")
    merged: list[list[int]] = []
    for a, b in sorted(pairs):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return tuple((a, b) for a, b in merged)


def frame_ranges_text(blocks: Sequence[Sequence[int]]) -> str:
    """``"A-B,C"`` of frame blocks (the inverse of :func:`parse_frame_ranges`)."""
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in blocks)


@dataclass(frozen=True)
class FrameSelection:
    """Raw frames ``begin:end``, less the ``exclude`` blocks, then every ``stride``-th,
    then the mean of each ``avg`` (a trailing partial group is dropped); ``end`` -1 or
    None: to the last frame.

    ``exclude``: blocks ``(first, last)`` of raw frame numbers (0-based, inclusive)
    dropped from the frame stream as if the file had never held them (pyCHX's bad frame
    list): the delays across a dropped block are shifted by its length. Given as pairs
    or ``"A-B,C-D"``; kept sorted and merged.
    """

    begin: int = 0
    end: int | None = -1
    stride: int = 1
    avg: int = 1
    exclude: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.stride < 1 or self.avg < 1:
            raise SpecError(f"stride and avg must be >= 1, got stride={self.stride}, "
                            f"avg={self.avg}")
        if int(self.begin) < 0:
            raise SpecError(f"--begin-frame must be >= 0 (got {self.begin}); frames count "
                            "from the first")
        if self.end is not None and int(self.end) < -1:
            raise SpecError(f"--end-frame must be >= 0, or -1 for the last frame "
                            f"(got {self.end})")
        object.__setattr__(self, "exclude", parse_frame_ranges(self.exclude))

    @property
    def n_excluded(self) -> int:
        """Raw frames in the excluded blocks (some may lie outside ``begin:end``)."""
        return sum(b - a + 1 for a, b in self.exclude)

    def describe(self) -> str:
        text = f"begin={self.begin} end={self.end} stride={self.stride} avg={self.avg}"
        if self.exclude:
            text += f" exclude={frame_ranges_text(self.exclude)}"
        return text


def _positive_time(name: str, value: float | None) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise SpecError(f"{name} must be a positive finite number (got {value})")


def parse_bins(spec: str | Sequence[int] | None, n_dynamic: int) -> np.ndarray:
    """1-based dynamic bins from ``"all"``, ``None``, ``"1-5,8"`` or a list.

    Raises
    ------
    ValueError
        Malformed text or bins outside 1..n_dynamic.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return np.arange(1, n_dynamic + 1, dtype=np.int64)
    out: set[int] = set()
    if isinstance(spec, str):
        for part in spec.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part:
                    a, b = (int(v) for v in part.split("-", 1))
                    if b < a:
                        raise ValueError
                    out.update(range(a, b + 1))
                else:
                    out.add(int(part))
            except ValueError:
                raise ValueError(f"bad bin range {part!r} (expected e.g. 1-5,8)") from None
    else:
        out.update(int(v) for v in spec)
    bins = np.asarray(sorted(out), dtype=np.int64)
    bad = bins[(bins < 1) | (bins > n_dynamic)]
    if bad.size:
        raise ValueError(f"dynamic bins {bad.tolist()} are outside 1..{n_dynamic}")
    return bins


def parse_bin_text(text: str | tuple[int, ...] | None,
                   n_dynamic: int | None = None) -> tuple[int, ...] | None:
    """The 1-based bins of ``"1-5,8"`` or of a tuple of bins (None for ``all`` or none
    given), checked against
    ``n_dynamic`` when it is known.

    Raises
    ------
    SpecError
        Malformed text, or bins outside 1..n_dynamic.
    """
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "all")):
        return None
    try:
        bins = parse_bins(text, n_dynamic if n_dynamic is not None else 2**62)
    except ValueError as exc:
        raise SpecError(f"--dq: {exc}") from None
    return tuple(int(b) for b in bins)


@dataclass(frozen=True)
class CorrelateSpec:
    """Everything a correlation computes, checked when made.

    Attributes
    ----------
    mode : {"multitau", "twotime", "both"}
    dq : str, tuple of int or None
        Two-time (and age x lag) bins, ``"1-5,8"`` or 1-based bin numbers (kept as a
        tuple); None or ``"all"``: every bin.
    frames : FrameSelection
    frame_time : float or None
        Seconds per raw frame; None: from the raw file, else 1 s.
    bin_time : float or None
        Event lists: frames of this length (None: time-tag mode).
    normalize_frame : bool
        Normalise each frame by its mean intensity.
    num_partial_g2 : int
        Cumulative g2 snapshots (0: none).
    smooth : {"sqmap", "dqmap"}
        The two-time normalisation group.
    save_g2_pixel : bool
        Keep the per-pixel G2/IP/IF stack (needs the multi-tau pass).
    ages : bool
        Also the age x lag map of the ``dq`` bins.
    ages_points : int
        Points per level of the age x lag map.
    groups : int
        K independent pixel groups (0: none): full maps with two-time, age x lag maps
        with ``ages``.
    group_tile : int
        Side of the detector tiles dealt to the groups.
    group_seed : int
        Seed of the deal of tiles to groups.
    """

    mode: str = "multitau"
    dq: str | tuple[int, ...] | None = None
    frames: FrameSelection = field(default_factory=FrameSelection)
    frame_time: float | None = None
    bin_time: float | None = None
    normalize_frame: bool = False
    num_partial_g2: int = 0
    smooth: str = "sqmap"
    save_g2_pixel: bool = False
    ages: bool = False
    ages_points: int = AGES_DEFAULT_POINTS
    groups: int = 0
    group_tile: int = GROUP_TILE_DEFAULT
    group_seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SpecError(f"--mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.smooth not in ("sqmap", "dqmap"):
            raise SpecError(f"smooth must be sqmap or dqmap, got {self.smooth!r}")
        _positive_time("--bin-time", self.bin_time)
        _positive_time("--frame-time", self.frame_time)
        if self.num_partial_g2 < 0:
            raise SpecError("--num-partial-g2 must be >= 0")
        if self.save_g2_pixel and self.mode == "twotime":
            raise SpecError("--save-g2-pixel needs --mode multitau or both (the stack "
                            "comes from the multi-tau pass)")
        if self.ages and int(self.ages_points) < 1:
            raise SpecError(f"--twotime-ages-points must be >= 1 (got {self.ages_points})")
        k, tile = int(self.groups), int(self.group_tile)
        if k < 0 or tile < 1:
            raise SpecError(f"--twotime-groups {k} --group-tile {tile}: need K >= 0 and "
                            "PX >= 1")
        if k and not self.two_time and not self.ages:
            raise SpecError("--twotime-groups needs --mode twotime or both, or "
                            "--twotime-ages")
        if self.dq is not None and not isinstance(self.dq, str):
            object.__setattr__(self, "dq", tuple(int(b) for b in self.dq))
        parse_bin_text(self.dq)  # its syntax now; its range once the q-map is read

    @property
    def two_time(self) -> bool:
        """The full two-time maps are computed."""
        return self.mode in ("twotime", "both")

    @property
    def multi_tau(self) -> bool:
        return self.mode in ("multitau", "both")

    @property
    def uses_bins(self) -> bool:
        """The ``dq`` bins are used (two-time maps or the age x lag map)."""
        return self.two_time or self.ages

    def as_dict(self) -> dict[str, Any]:
        """Plain values (a batch task, a session file); :meth:`from_dict` reads it back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CorrelateSpec:
        d = dict(d)
        sel = d.pop("frames", None) or {}
        return cls(frames=FrameSelection(**sel), **d)


@dataclass(frozen=True)
class PlanRequest:
    """What the user asked of how a job runs; the plan decides the rest.

    ``path``: ``auto``, ``sparse`` (on the photons) or ``dense``; ``engine``: an
    :class:`Engine` (``auto``: by the job's cost); ``device``: ``auto``, ``cpu`` or
    ``gpu`` (the run configuration's, when not given); ``verbose``: the plan is said
    even when nothing was requested.
    """

    path: str = "auto"
    engine: Engine = Engine.AUTO
    device: str | None = None
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.path not in ("auto", "sparse", "dense"):
            raise SpecError(f"--path must be auto, sparse or dense, got {self.path!r}")
        object.__setattr__(self, "engine", Engine.parse(self.engine))

    @property
    def said(self) -> bool:
        """The plan is worth saying: asked for (-v), or an engine or device requested."""
        return (self.verbose or self.engine is not Engine.AUTO
                or self.device not in (None, "auto"))
