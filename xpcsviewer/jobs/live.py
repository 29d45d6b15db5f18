"""Follow an acquisition: correlate frames as the detector writes them (``xpcsviewer live``).

:func:`follow` polls a source (:mod:`xpcsviewer.io.raw.live`: a growing HDF5 file,
SWMR or not, or a folder of block files), reads only the frames that are new and
complete, feeds them to the resumable multi-tau correlator
(:class:`~xpcsviewer.compute.multitau.stream.StreamingMultitau`; for a photon-sparse
source (a Rigaku ``.bin`` being appended, a growing ESRF CSR file or a folder of its
blocks) the hits go to :class:`~xpcsviewer.compute.multitau.photons.StreamingSparseMultitau`
instead, :mod:`xpcsviewer.jobs._live_sparse`) and every ``every``
seconds writes the partial result atomically (``/xpcs/live/partial = True``), fits it
with the ``fit`` command's entry point when asked, and hands an update to
``on_update``. The acquisition ends at the expected frame count, when the writer closes
the file, or after ``idle`` seconds without a new frame (a writer that paused or died: the
job finishes with the frames that were complete and marks the result partial, ``problem
= "idle"``, unless the source's own end signal was seen; a partial word or a missing
block marks it partial too, naming it). The final file is the one
``xpcsviewer correlate`` writes for the complete frames (same datasets; tested) with
``partial = False``, and it is fitted.

Multi-tau only: a two-time map needs every frame pair, so it cannot be shown growing
cheaply; correlate the finished file with ``--mode twotime`` for it.
Nothing here imports Qt; the GUI runs :func:`follow` in a worker.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.spec import Engine, SpecError
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.live import SourceNotReady, open_live_source
from xpcsviewer.jobs._live_report import _Reporting
from xpcsviewer.jobs._live_sparse import (
    ReadAhead,
    frames_per_read,
    photon_stream,
    warm_photons,
)
from xpcsviewer.jobs._live_types import (
    LiveOptions,
    LiveUpdate,
    LiveView,
    fit_output_path,
)
from xpcsviewer.progress import Cancelled, CancelToken

__all__ = ["LiveOptions", "LiveUpdate", "LiveView", "fit_output_path", "follow", "qmap_beside"]

class _Follower(_Reporting):
    """The state of one :func:`follow` run."""

    def __init__(self, source: Any, qmap: Any, output: Path, opts: LiveOptions,
                 fitter: Callable[[list[str]], list[Any]] | None,
                 on_update: Callable[[LiveUpdate], None] | None, with_view: bool) -> None:
        self.src = source
        self.qmap = qmap
        self.output = output
        self.opts = opts
        self.fitter = fitter
        self.on_update = on_update
        self.with_view = with_view
        self.stream: Any = None
        self.done = 0
        self.t0 = time.monotonic()
        self.start_iso = None
        self.used = (np.asarray(qmap.dynamic_roi_map) > 0) | (np.asarray(qmap.static_roi_map) > 0)
        self.used_flat = self.used.ravel()
        self.negatives = 0
        self.seen = 0  # complete frames seen at the last poll
        self.seen_mtime = 0.0
        self.seen_at = self.t0
        self.first_seen: float | None = None  # when complete frames were first seen
        self.last_growth: float | None = None  # last activity of a readable source
        self._sig: tuple = ()
        self.prev = (self.t0, 0, 0)  # (time, done, seen) at the previous update
        self.t_update = self.t0
        self.written = -1
        self.interval = opts.every
        self.frame_time = opts.frame_time
        self.time_unit = "s"
        self.notes: list[str] = []
        self.updates = 0
        self.hits = 0  # hits correlated (a sparse source)
        self.prev_hits = 0
        self.photons = False  # the photon correlator can run (numba)
        self.ahead = ReadAhead(source, self.used_flat)
        self.marks: dict[str, float] = {}  # the final update's stages (monotonic)
        self._init_reporting()

    # ---------------------------------------------------------------- frames
    def _checked(self, frames: np.ndarray) -> np.ndarray:
        """Negative counts: refused where the q-map uses the pixel, else set to 0
        (the rule of ``correlate``). Non-finite counts at a used pixel are refused too:
        ``correlate`` masks such a pixel for the whole run, which frames already
        correlated cannot follow (name it in the q-map's mask and start again)."""
        if frames.dtype.kind not in "if":
            return frames
        if frames.dtype.kind == "f":
            nf = ~np.isfinite(frames)
            if nf.any():
                bad = nf & self.used
                if bad.any():
                    k, r, c = (int(v[0]) for v in np.nonzero(bad))
                    raise XpcsFileError(
                        self.src.describe(), f"non-finite count in frame {self.done + k} at "
                        f"pixel ({r}, {c}), where the q-map uses the pixel", self.opts.dataset,
                        "finite counts (or mask that pixel in the q-map)")
                frames = np.where(nf, 0, frames)
        neg = frames < 0
        if not neg.any():
            return frames
        bad = neg & self.used
        if bad.any():
            k, r, c = (int(v[0]) for v in np.nonzero(bad))
            raise XpcsFileError(self.src.describe(), f"negative counts ({frames[k, r, c]!r} in "
                                f"frame {self.done + k} at pixel ({r}, {c})) where the q-map "
                                "uses the pixel", self.opts.dataset,
                                "counts >= 0 (or mask those pixels in the q-map)")
        self.negatives += int(neg.sum())
        return np.where(neg, 0, frames)

    def check_shape(self) -> None:
        """Refuse frames of another shape than the q-map's as soon as the source says."""
        shape = self.src.frame_shape
        if shape is not None and tuple(shape) != tuple(self.qmap.shape):
            raise XpcsFileError(self.src.describe(), f"frames are {shape[0]}x{shape[1]} but "
                                f"the q-map is {self.qmap.shape[0]}x{self.qmap.shape[1]}",
                                self.where, "frames of the q-map's detector shape")

    def prepare(self) -> None:
        """The correlator's state and kernels, before the first frame arrives (a source
        whose layout is not known yet: the kernels of both correlators)."""
        from xpcsviewer.compute.multitau.stream import StreamingMultitau

        qm = self.qmap
        sparse = getattr(self.src, "sparse", False)
        if sparse is not False:
            self.photons = warm_photons(getattr(self.src, "dtype", None))
        if sparse and self.photons:
            self.stream = photon_stream(qm, self.opts.spec, self.opts.frames)
            return
        self.stream = StreamingMultitau(qm, self.opts.spec, expected_frames=self.opts.frames,
                                        engine=self.opts.engine)
        self.stream.warm()

    @property
    def engine(self) -> str:
        """The correlator's engine; ``"auto"`` while the source's layout is not known."""
        return "auto" if getattr(self.src, "sparse", False) is None else self.stream.engine

    @property
    def sparse(self) -> bool:
        return bool(getattr(self.stream, "photons", False))

    @property
    def where(self) -> str | None:
        """The field errors name: the dense dataset, or a sparse source's own."""
        if getattr(self.src, "sparse", False):
            return getattr(self.src, "dataset", None)
        return self.opts.dataset

    def _stream(self) -> Any:
        if self.start_iso is None:
            if getattr(self.src, "sparse", False) and not self.sparse and self.done == 0:
                # a source that told its layout late: the photon correlator after all
                if self.photons:
                    self.stream = photon_stream(self.qmap, self.opts.spec,
                                                self.opts.frames)
                else:
                    self.notes.append("photon correlator unavailable (needs numba): "
                                      "the hits were correlated as dense frames")
            self.check_shape()
            self.start_iso = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
            if self.frame_time is None:
                self.frame_time = self.src.frame_time
            if self.frame_time is None:
                self.frame_time = 1.0
                self.time_unit = "frames"
                self.notes.append("no frame time given or in the raw file: 1 s per frame "
                                  "(delays in frames)")
        return self.stream

    def src_expected(self) -> int | None:
        return self.opts.frames or self.src.state.expected

    def read_to(self, target: int, *, stop: Callable[[], bool],
                cancel: CancelToken | None, progress: Any) -> None:
        """Read and correlate complete frames up to ``target``; partial updates on time.
        Hits: the next block is read while the last is correlated (:class:`ReadAhead`;
        no read is left under way on return, so polls and closes never meet one)."""
        try:
            self._read_to(target, stop, cancel, progress)
        finally:
            self.ahead.drain()

    def _read_to(self, target: int, stop: Callable[[], bool],
                 cancel: CancelToken | None, progress: Any) -> None:
        while self.done < target:
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            if stop():
                return
            s = self._stream()
            if self.sparse:
                b = min(target, self.done + frames_per_read(self.hits, self.done))
                try:
                    block, neg = self.ahead.take(self.done, b)
                except SourceNotReady:
                    return
                if b < target:  # the next block, sized by the hits read so far
                    n = self.hits + block.n_events
                    self.ahead.submit(b, min(target, b + frames_per_read(n, b)))
                self.negatives += neg
                s.feed_events(block)
                self.hits += block.n_events
            else:
                b = min(target, self.done + self.opts.read_chunk)
                try:
                    frames = self.src.read(self.done, b)
                except SourceNotReady:
                    return
                s.feed(self._checked(frames))
            self.done = b
            if progress is not None:
                # a known end: a fraction; else a busy bar with the count
                exp = self.src_expected()
                progress(self.done, exp or 0, f"{self.done:,} frames correlated")
            if time.monotonic() - self.t_update >= self.interval:
                self.update(final=False)

    # --------------------------------------------------------------- updates
    def _result(self, partial: bool, end: str | None, problem: str | None = None) -> Any:
        from xpcsviewer.compute.pipeline import (
            CorrelatedResult,
            ResultRecord,
            assemble_result,
            multitau_model,
        )

        s = self.stream
        r = s.result()
        n = self.done
        t0 = float(self.frame_time)
        raw = os.path.realpath(self.src.describe())
        common = {"raw": raw, "begin_frame": 0, "end_frame": n, "stride_frame": 1,
                  "avg_frame": 1, "raw_frames": n, "n_frames": n, "backend": "numpy"}
        if getattr(self.src, "sparse", False):
            common.update(raw_layout=str(self.src.layout), raw_events=int(self.hits),
                          path="sparse" if self.sparse else "dense",
                          path_reason="live photon-sparse source")
        mt = multitau_model(r, t0, 1, 1, common)
        record = ResultRecord(path=self.output, raw_path=raw, count_time=self.src.count_time,
                              start_time=self.start_iso)
        res = assemble_result(self.qmap, s.scat, mt=mt, tt=None, segments=None,
                              frame_time=t0, record=record)
        live = {"partial": bool(partial), "frames": int(n), "source": str(self.src.describe()),
                "updated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
        if end is not None:
            live["end"] = end
        if problem is not None:
            live["problem"] = problem
        res.metadata["xpcs/live"] = live
        return CorrelatedResult(res, s.scat.mean_image(), None)

    # ----------------------------------------------------------------- poll
    def poll(self) -> Any:
        st = self.src.poll()
        self.check_shape()
        now = time.monotonic()
        if st.complete > 0 and self.first_seen is None:
            self.first_seen = now
        if st.complete > self.seen:
            self.seen = st.complete
            self.seen_mtime = st.mtime
            self.seen_at = now
        # activity: new frames, a longer dataset or a newer file (a writer that flushes)
        sig = (st.complete, st.extent, st.mtime)
        if st.readable and sig != self._sig:
            self._sig = sig
            self.last_growth = now
        return st


#: the engines of the streaming correlator
_STREAM_ENGINES = (Engine.AUTO, Engine.COMPILED, Engine.ARRAY)


def _warmed(fitter: Callable[[list[str]], list[Any]]) -> Callable[[list[str]], list[Any]]:
    """``fitter`` after JAX is loaded and the default fit programs are compiled.

    The warm-up (:func:`xpcsviewer.jobs.warmup.precompile`, least squares only) starts
    at once in a thread, while the first frames are awaited and correlated, so the first
    fit does not pay for it; a fit waits for the warm-up to end (importing JAX from two
    threads at once is not safe).
    """
    def warm() -> None:
        try:
            from xpcsviewer.jobs.warmup import precompile

            precompile(nuts=False)
        except (Exception, KeyboardInterrupt):  # the fit says what is wrong; a Ctrl-C
            pass  # (raised here by precompile's progress check) ends the run, not this

    th = threading.Thread(target=warm, name="xpcs-live-fit-warmup", daemon=True)
    th.start()

    def fit(paths: list[str], **kw: Any) -> list[Any]:
        th.join()
        return fitter(paths, **kw) if paths else []

    fit.warming = th  # type: ignore[attr-defined]
    return fit


def follow(source: str | os.PathLike, qmap: Any, output: str | os.PathLike,
           options: LiveOptions | None = None, *,
           fitter: Callable[[list[str]], list[Any]] | None = None,
           on_update: Callable[[LiveUpdate], None] | None = None,
           on_ready: Callable[[dict[str, Any]], None] | None = None,
           stop: Callable[[], bool] | threading.Event | None = None,
           with_view: bool = False, progress: Any = None,
           cancel: CancelToken | None = None) -> LiveUpdate:
    """Follow ``source`` until the acquisition ends; returns the final update.

    Parameters
    ----------
    source : path
        A growing raw HDF5 file, a folder of block files, or ``folder/PATTERN``; or a
        photon-sparse one: a Rigaku ``.bin`` being appended, a growing ESRF CSR HDF5 file,
        a folder of ESRF sparse blocks (chosen by content,
        :func:`~xpcsviewer.io.raw.live.open_live_source`; the detector shape of a
        file that stores none is the q-map's).
    qmap : QMap
        The partition (:func:`xpcsviewer.io.results.reader.read_qmap`).
    output : path
        The result file (rewritten atomically at every update).
    options : LiveOptions
    fitter : callable, optional
        ``fitter([path], cancel=token) -> [FitOutcome]`` (``token`` None, or a partial
        fit's CancelToken, cancelled when the final update begins); with ``options.fit``
        (:func:`xpcsviewer.jobs.fitfile.fit_result_files` with the model bound).
    on_update : callable, optional
        Called with every :class:`LiveUpdate`, partial and final (in this thread).
    on_ready : callable, optional
        Called once the correlator's kernels (and, with ``fit``, the fit programs) are
        loaded, before the first frame is read: ``{"event": "ready", ...}``.
    stop : callable or threading.Event, optional
        When it says so, finish now with the frames read (``end="stopped"``; the file
        keeps ``partial = True``).
    with_view : bool
        Attach a :class:`LiveView` to each update (the GUI's plots).
    progress, cancel :
        Progress ``(frames, expected or seen, message)``; a cancel abandons the run
        (the last partial file stays).

    Raises
    ------
    XpcsFileError
        The frames do not fit the q-map, negative counts at used pixels, a bad dataset.
    TimeoutError
        No frame within ``options.start_wait`` seconds.
    """
    opts = options or LiveOptions()
    if not (opts.every > 0 and opts.idle > 0 and opts.poll > 0):
        raise ValueError("every, idle and poll must be positive")
    if opts.engine not in _STREAM_ENGINES:
        raise SpecError(f"live: engine {opts.engine.value} does not follow a stream")
    if isinstance(stop, threading.Event):
        ev = stop
        stop_fn: Callable[[], bool] = ev.is_set
    else:
        stop_fn = stop or (lambda: False)
    src = open_live_source(source, opts.dataset, opts.frames, shape=tuple(qmap.shape))
    if opts.fit and fitter is not None:
        fitter = _warmed(fitter)
    fol = _Follower(src, qmap, Path(output), opts, fitter, on_update, with_view)
    end, note = None, ""
    try:
        fol.prepare()
        warming = getattr(fol.fitter, "warming", None)
        while warming is not None and warming.is_alive():
            # the fits are ready too; a stop (Ctrl-C) is seen while they load
            if stop_fn() or (cancel is not None and cancel.cancelled):
                break
            warming.join(0.1)
        if on_ready is not None:
            on_ready({"event": "ready", "source": src.describe(), "engine": fol.engine,
                      "fit": bool(opts.fit and fitter is not None)})
        # the wait for a first frame starts when ready (a loaded machine's warm-up is
        # not the writer's delay)
        t_ready = time.monotonic()
        while True:
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            if stop_fn():
                end = "stopped"
                break
            st = fol.poll()
            t_poll = time.monotonic()
            if st.problem in HALTING:  # nothing more is read from it
                end = st.problem
                break
            target = st.complete
            if st.expected:
                target = min(target, st.expected)
            fol.read_to(target, stop=stop_fn, cancel=cancel, progress=progress)
            src.release()
            now = time.monotonic()
            if st.expected and fol.done >= st.expected:
                end = "expected"
                break
            if st.problem:  # a corrupt block: the blocks before it are read
                end = st.problem
                break
            if st.writer == "died":
                end = "not_closed"
                break
            if st.writer == "closed" and st.readable:
                end = "closed"
                break
            # measured at the poll: time spent here (a slow first fit) is not the writer's
            if fol.last_growth is None:
                if t_poll - t_ready > opts.start_wait:
                    raise TimeoutError(f"no frame in {opts.start_wait:g} s "
                                       f"({st.note or 'no data'})")
            elif t_poll - fol.last_growth >= opts.idle:
                end = "idle"
                break
            if now - fol.t_update >= fol.interval:
                fol.update(final=False)
            left = opts.poll - (time.monotonic() - now)
            if left > 0:
                if isinstance(stop, threading.Event):
                    stop.wait(left)
                else:
                    time.sleep(left)
        fol.marks["end"] = time.monotonic()
        problem = end if end in HALTING else None
        if end in HALTING:
            note = _problem_note(end, st.note, fol.done)
        elif end != "stopped":
            st = src.final()
            if st.complete > fol.seen:
                fol.seen, fol.seen_mtime, fol.seen_at = st.complete, st.mtime, time.monotonic()
            target = min(st.complete, st.expected) if st.expected else st.complete
            if st.problem not in HALTING:
                fol.read_to(target, stop=lambda: False, cancel=cancel, progress=progress)
            if fol.done < target and not st.problem:  # unreadable now: what was read
                note = f"{target - fol.done} complete frames could not be read at the end"
            if end == "idle":
                note = "; ".join(x for x in (
                    f"no new frame for {opts.idle:g} s: the writer stopped or died; "
                    f"finished with the {fol.done} complete frames", note) if x)
            if st.problem:
                problem = st.problem
                note = "; ".join(x for x in (note, _problem_note(problem, st.note, fol.done))
                                 if x)
            elif end == "not_closed" or (end == "idle" and st.writer in ("open", "died")
                                         and _kind(src) in ("file", "csr")):
                problem = "not_closed"
                note = "; ".join(x for x in (note, _problem_note(problem, "", fol.done)) if x)
            elif end == "idle" and st.writer != "closed" and not (
                    st.expected and fol.done >= st.expected):
                # a pause is not an end: only the source's own end signal is (issue 50)
                problem = "idle"
                note = "; ".join(x for x in (note, _problem_note(problem, "", fol.done)) if x)
            if st.expected and fol.done < st.expected:
                note = "; ".join(x for x in (note, f"{fol.done} of {st.expected} expected "
                                                   "frames") if x)
            if st.note and not st.problem and (not st.readable
                                               or getattr(src, "sparse", False)):
                # (a sparse source says what it left out at the end: a partial word, ...)
                note = "; ".join(x for x in (note, st.note) if x)
        else:
            note = f"stopped after {fol.done} frames (the result keeps partial = True)"
        if fol.negatives:
            fol.notes.append(f"{fol.negatives} negative counts at masked pixels were set to 0")
        if fol.done < 2 and end == "stopped":
            raise Cancelled()  # nothing to write: a stop before 2 frames is a cancel
        if fol.done < 2:
            raise XpcsFileError(src.describe(), f"only {fol.done} complete frame(s) to correlate "
                                f"({note or st.note or 'no data'})", fol.where,
                                "at least 2 frames")
        fol.marks["read"] = time.monotonic()
        final = fol.update(final=True, end=end, note=note, problem=problem)
        assert final is not None
        return final
    finally:
        fol.ahead.close()
        src.close()
        fol.join_updates()


#: ends for which nothing more is read from the source: its frames could come from
#: another file or dataset, or from past a truncation
HALTING = ("truncated", "replaced", "recreated")


def _kind(src: Any) -> str:
    return getattr(getattr(src, "inner", None) or src, "kind", "")


def _problem_note(problem: str, what: str, done: int) -> str:
    """What happened to the source and what the result holds (docs/live.md)."""
    if problem == "not_closed":
        return ("the writer did not close the file (HDF5 still marks it open for writing: "
                f"it was killed or stopped): the result may be partial ({done} frames)")
    if problem == "idle":
        return ("the source gave no end signal (a closed file, the expected frame count, a "
                "series' declared length; give --frames where it states none): the result "
                f"may be partial ({done} frames)")
    if problem in ("corrupt", "missing_block"):
        return f"{what}; the result is partial ({done} frames of the blocks before it)"
    if problem == "partial_word":
        return f"{what}; the result is partial ({done} frames)"
    if problem == "truncated":
        return f"{what} after frame {done}: the result is partial ({done} frames)"
    return (f"{what} after frame {done}: no frame of it was taken; the result is partial "
            f"({done} frames)")


def qmap_beside(source: str | os.PathLike) -> Path | None:
    """A q-map (partition) file beside a raw source, or None.

    Looks in the source's folder (a folder source: in it, then beside it) for HDF5 files
    whose name says ``qmap``, ``partition`` or ``mask`` and that hold a ``/qmap`` group;
    the newest wins.
    """
    import h5py

    p = Path(source)
    folders = [p] if p.is_dir() else []
    folders.append(p.parent if p.name else p)
    found: list[tuple[float, Path]] = []
    for folder in dict.fromkeys(folders):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            low = name.lower()
            if not low.endswith((".h5", ".hdf", ".hdf5")) or not any(
                    w in low for w in ("qmap", "partition", "mask")):
                continue
            cand = folder / name
            try:
                with h5py.File(cand, "r", locking=False) as f:
                    if "qmap" in f:
                        found.append((cand.stat().st_mtime, cand))
            except OSError:
                continue
        if found:
            break
    return max(found)[1] if found else None
