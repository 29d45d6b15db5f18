"""A folder that receives frame-block files one by one (Eiger-style ``…_data_000001.h5``)
as a live source (see :mod:`xpcsviewer.io.raw.live`). The dense layout's names (the frame
dataset, frame time, an Eiger master file's counts) are :mod:`xpcsviewer.io.raw.dense`'s.

Rules (docs/live.md states them for users)
------------------------------------------
**Folder of blocks** (``NAME_000001.h5``, ``NAME_000002.h5``, ... each with
``/entry/data/data``; Eiger-style ``*_data_NNNNNN.h5``): block k is complete when block
k+1 exists; the newest block when nothing has it open for writing (flags / locks), its
size and modification time did not change since the previous poll and it opens with a
(frames, rows, cols) dataset; at the end, when it opens. The expected count comes from
``--frames`` or an Eiger master file beside the blocks (``nimages`` x ``ntrigger``).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.dense import (
    COUNT_TIME,
    EIGER_FRAME_TIME,
    EIGER_NIMAGES,
    EIGER_NTRIGGER,
    FRAME_TIME,
    RAW_DATASET,
)
from xpcsviewer.io.raw.live_common import (
    _BLOCK_RE,
    CLOSE_GRACE_S,
    SourceNotReady,
    SourceState,
    _check_frames,
    _first_line,
    _open_shared,
    _positive_number,
    _read_pieces,
    writer_state,
)

__all__ = ["BlockFolderSource"]


def _numbered(folder: Path, pattern: str | None) -> dict[str, list[tuple[int, Path]]]:
    """Numbered HDF5 files of ``folder`` grouped by prefix (master files left out)."""
    groups: dict[str, list[tuple[int, Path]]] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return groups
    from fnmatch import fnmatch

    for name in names:
        if pattern is not None and not fnmatch(name, pattern):
            continue
        m = _BLOCK_RE.match(name)
        if m is None or "master" in name.lower():
            continue
        groups.setdefault(m.group("prefix"), []).append((int(m.group("num")), folder / name))
    for v in groups.values():
        v.sort()
    return groups


def until_gap(entries: list[tuple[int, Path]]) -> tuple[list[Path], tuple[int, list[Path]] | None]:
    """The block files before the first missing number (consecutive from the lowest),
    and ``(the missing number, the files after it)`` when one is missing, else None."""
    for i in range(1, len(entries)):
        if entries[i][0] != entries[i - 1][0] + 1:
            return ([p for _, p in entries[:i]],
                    (entries[i - 1][0] + 1, [p for _, p in entries[i:]]))
    return [p for _, p in entries], None


def gap_note(gap: tuple[int, list[Path]], at_end: bool) -> str:
    """What a missing block means: awaited during the run, named at the end (issue 50:
    later blocks are never joined to the earlier ones as if contiguous)."""
    num, after = gap
    m = _BLOCK_RE.match(after[0].name)
    name = (f"{m.group('prefix')}{num:0{len(m.group('num'))}d}.{m.group(3)}" if m
            else f"block {num}")
    names = ", ".join(q.name for q in after[:5]) + (", ..." if len(after) > 5 else "")
    if not at_end:
        return f"waiting for {name} (the {len(after)} block(s) after it wait: {names})"
    return (f"block {name} never arrived: the {len(after)} block(s) after it ({names}) were "
            "never read (correlate refuses a series with a missing block)")


class BlockFolderSource:
    """A folder that receives frame-block files one by one.

    Parameters
    ----------
    folder : str or Path
        The folder, or ``folder/PATTERN`` with a shell pattern (``run7_data_*.h5``)
        when it holds several series.
    dataset : str
        The frames inside each block.
    expected : int, optional
        Frames the acquisition will have (else from an Eiger master file).
    """

    kind = "folder"

    def __init__(self, folder: str | os.PathLike, dataset: str = RAW_DATASET,
                 expected: int | None = None) -> None:
        folder = Path(folder)
        self.pattern: str | None = None
        if not folder.is_dir() and any(ch in folder.name for ch in "*?["):
            self.pattern, folder = folder.name, folder.parent
        self.path = folder
        self.dataset = dataset
        self.expected_arg = int(expected) if expected else None
        self.frame_shape: tuple[int, int] | None = None
        self.dtype: np.dtype | None = None
        self.frame_time: float | None = None
        self.count_time: float | None = None
        self.blocks: list[tuple[Path, int]] = []  # accepted blocks and their frames
        self._starts = [0]
        self._prefix: str | None = None
        self._last_sig: dict[Path, tuple[int, float]] = {}
        self._master_expected: int | None = None
        self._handle: tuple[Path, h5py.File] | None = None
        self._state = SourceState(note="waiting for the first block")
        self.note = ""
        # a block that a later one follows but that does not open: (size, mtime) and
        # since when it has failed unchanged
        self._failing: dict[Path, tuple[tuple[int, float], float]] = {}
        self._why: dict[Path, str] = {}
        self._gap: tuple[int, list[Path]] | None = None  # a missing block, the ones after

    @property
    def state(self) -> SourceState:
        """What the last poll saw."""
        return self._state

    def _series(self) -> list[Path]:
        groups = _numbered(self.path, self.pattern)
        if not groups:
            return []
        if self._prefix is None:
            if len(groups) > 1:
                # several series: the newest one (said in the note)
                newest = max(groups, key=lambda k: max(p.stat().st_mtime for _, p in groups[k]))
                self.note = (f"{len(groups)} numbered series in the folder; following "
                             f"{newest}* (give folder/PATTERN to choose)")
                self._prefix = newest
            else:
                self._prefix = next(iter(groups))
        files, self._gap = until_gap(groups.get(self._prefix, []))
        return files

    def _block_frames(self, p: Path) -> int:
        """Frames of block ``p`` (raises SourceNotReady / XpcsFileError)."""
        try:
            with _open_shared(p) as f:
                ds = f.get(self.dataset)
                if not isinstance(ds, h5py.Dataset):
                    raise SourceNotReady(f"{p.name}: no {self.dataset} yet")
                shape, dt = _check_frames(p, ds, self.dataset)
                if self.frame_shape is None:
                    self.frame_shape, self.dtype = shape, dt
                    self.frame_time = _positive_number(f, FRAME_TIME)
                    self.count_time = _positive_number(f, COUNT_TIME)
                elif shape != self.frame_shape:
                    raise XpcsFileError(p, f"frames are {shape[0]}x{shape[1]}, earlier "
                                           f"blocks {self.frame_shape[0]}x{self.frame_shape[1]}",
                                        self.dataset, "one frame shape for the whole series")
                return int(ds.shape[0])
        except OSError as exc:
            raise SourceNotReady(f"{p.name}: cannot open it now ({_first_line(exc)})") from None

    def _master(self) -> None:
        if self._master_expected is not None or self._prefix is None:
            return
        stem = self._prefix.rstrip("_")
        stem = stem[: -len("_data")] if stem.endswith("_data") else stem
        for cand in (self.path / f"{stem}_master.h5", self.path / f"{stem}master.h5"):
            if not cand.is_file():
                continue
            try:
                with _open_shared(cand) as f:
                    n = _positive_number(f, EIGER_NIMAGES)
                    t = _positive_number(f, EIGER_NTRIGGER) or 1.0
                    if n:
                        self._master_expected = round(n * t)
                    ft = _positive_number(f, EIGER_FRAME_TIME)
                    if ft and self.frame_time is None:
                        self.frame_time = ft
            except (OSError, SourceNotReady):
                pass
            return

    def _accept(self, p: Path, last: bool, at_end: bool) -> bool:
        try:
            st = p.stat()
        except OSError:
            return False
        sig = (st.st_size, st.st_mtime)
        if last and not at_end:
            before = self._last_sig.get(p)
            self._last_sig[p] = sig
            if before != sig or writer_state(p) == "open":
                return False
        try:
            n = self._block_frames(p)
        except SourceNotReady as exc:
            self._why[p] = str(exc)
            return False
        self.blocks.append((p, n))
        self._starts.append(self._starts[-1] + n)
        return True

    def _scan(self, at_end: bool) -> SourceState:
        files = self._series()
        self._master()
        pending, problem = "", ""
        for i in range(len(self.blocks), len(files)):
            last = i == len(files) - 1
            if not self._accept(files[i], last, at_end):
                pending = f"{files[i].name} not complete yet"
                if (not last or at_end) and self._corrupt(files[i], at_end):
                    problem, pending = "corrupt", self._corrupt_note(files, i)
                break
        if self._gap is not None and not problem and len(self.blocks) == len(files):
            pending = gap_note(self._gap, at_end)
            problem = "missing_block" if at_end else ""
        complete = self._starts[-1]
        per_block = self.blocks[-1][1] if self.blocks else 0
        extent = complete + (len(files) - len(self.blocks)) * per_block
        writer = "unknown"
        if files and len(self.blocks) < len(files):
            writer = "open"
        mtime = max((p.stat().st_mtime for p, _ in self.blocks[-1:]), default=0.0)
        note = "; ".join(x for x in (self.note, pending) if x) or (
            "" if files else "waiting for the first block")
        self._state = SourceState(complete, extent, self.expected_arg or self._master_expected,
                                  writer, bool(files), note, mtime, problem)
        return self._state

    def _corrupt(self, p: Path, at_end: bool) -> bool:
        """Whether block ``p``, complete by the rules (a later block exists, or the
        end), is damaged: it has failed to open unchanged for ``CLOSE_GRACE_S`` (one
        still being copied or flushed changes), or at the end."""
        if at_end:
            return True
        try:
            st = p.stat()
        except OSError:
            return False
        sig, now = (st.st_size, st.st_mtime), time.monotonic()
        was = self._failing.get(p)
        if was is None or was[0] != sig:
            self._failing[p] = (sig, now)
            return False
        return now - was[1] >= CLOSE_GRACE_S

    def _corrupt_note(self, files: list[Path], i: int) -> str:
        bad = files[i]
        why = self._why.get(bad, "").removeprefix(f"{bad.name}: ")
        rest = files[i + 1:]
        after = ""
        if rest:
            names = ", ".join(q.name for q in rest[:5]) + (", ..." if len(rest) > 5 else "")
            after = f" and the {len(rest)} block(s) after it ({names})"
        return (f"block {bad.name} cannot be read ({why or 'damaged'}): it{after} were "
                f"never read")

    def poll(self) -> SourceState:
        """Look at the folder now (never raises for a block being written)."""
        if not self.path.is_dir():
            self._state = replace(self._state, readable=False,
                                  note=f"waiting for {self.path} to appear")
            return self._state
        return self._scan(at_end=False)

    def final(self) -> SourceState:
        """The frames to finish with: every block that opens, the newest included."""
        return self._scan(at_end=True)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Frames ``[start, stop)`` across blocks."""
        parts = []
        a = int(start)
        while a < stop:
            k = int(np.searchsorted(self._starts, a, side="right")) - 1
            p, n = self.blocks[k]
            b = min(stop, self._starts[k] + n)
            if self._handle is None or self._handle[0] != p:
                self.release()
                self._handle = (p, _open_shared(p))
            try:
                parts.append(_read_pieces(self._handle[1][self.dataset], a - self._starts[k],
                                          b - self._starts[k]))
            except (OSError, RuntimeError, KeyError) as exc:
                self.release()
                raise SourceNotReady(f"{p.name}: read failed ({_first_line(exc)})") from None
            a = b
        if not parts:
            return np.empty((0, *(self.frame_shape or (0, 0))), dtype=self.dtype or np.uint16)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def release(self) -> None:
        """Close the open block."""
        if self._handle is not None:
            try:
                self._handle[1].close()
            except Exception:
                pass
            self._handle = None

    close = release

    def describe(self) -> str:
        return str(self.path / self.pattern) if self.pattern else str(self.path)
