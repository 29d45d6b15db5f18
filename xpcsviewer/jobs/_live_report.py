"""The updates of a live run (:mod:`xpcsviewer.jobs.live`): write, fit and report.

A partial update's result is assembled in the reader's thread (the correlator is not
thread-safe), then written, fitted and reported in a thread of its own beside the
reader, so a slow fit never holds up the frames. The final update drops a partial one
still running and does not wait for it: the partial fit is cancelled (it stops at the
solver's next check), so it no longer takes the CPU the final fit needs.
"""

from __future__ import annotations

import errno
import math
import threading
import time
from typing import Any

import numpy as np

from xpcsviewer.jobs._live_types import (
    TRACE_POINTS,
    LiveUpdate,
    LiveView,
    _decimate,
    fit_output_path,
)


class _Reporting:
    """The update half of :class:`xpcsviewer.jobs.live._Follower`."""

    def _init_reporting(self) -> None:
        # one writer of the output and fit files at a time; ``gen`` moves on at the final
        # update, after which a partial update still running writes and reports nothing
        self.lock = threading.Lock()
        self.gen = 0
        self.bg: threading.Thread | None = None
        self.bg_error: BaseException | None = None
        # what this run has on disk: {"result"|"fit": {"path", "frames", "partial"}}
        self.on_disk: dict[str, dict[str, Any]] = {}
        self.partial_cancel: Any = None  # the running partial fit's CancelToken

    def update(self, final: bool, end: str | None = None, note: str = "",
               problem: str | None = None) -> LiveUpdate | None:
        """Write (atomically), fit and report the result of the frames so far; a partial
        one in a thread beside the reader (skipped while the previous one runs)."""
        if self.bg_error is not None:
            err, self.bg_error = self.bg_error, None
            raise err
        if self.done < 2:
            return None
        if not final and self.done == self.written:
            self.t_update = time.monotonic()
            return None
        if not final and self.bg is not None and self.bg.is_alive():
            return None
        partial = not final or end == "stopped" or problem is not None
        t = time.monotonic()
        if final:
            t_wait = time.monotonic()
            with self.lock:  # waits only for a partial write or report under way
                self.gen += 1
                if self.partial_cancel is not None:
                    self.partial_cancel.cancel()
            self.marks["end_partial"] = time.monotonic() - t_wait
        cres = self._result(partial, end, problem)
        self.written = self.done
        up = self._stats(final, end, note)
        up.problem = problem
        if final:
            self.marks["result"] = time.monotonic()
            self._publish(up, cres, final, self.gen)
            self.t_update = time.monotonic()
            return up
        self.t_update = time.monotonic()
        snap = self.t_update - t
        self.bg = threading.Thread(target=self._partial, args=(up, cres, self.gen, snap),
                                   name="xpcs-live-update", daemon=True)
        self.bg.start()
        return up

    def _partial(self, up: LiveUpdate, cres: Any, gen: int, snap: float) -> None:
        t = time.monotonic()
        try:
            self._publish(up, cres, False, gen)
        except Exception as e:  # raised in the reader's thread
            if gen == self.gen:
                self.bg_error = e
            return
        # an update that costs much (a big detector, a slow fit, a loaded machine) comes
        # less often: the reader waits for the snapshot (at most a quarter of its time);
        # the write and fit run beside it, at most about 2/3 of the time
        self.interval = max(self.opts.every, 3.0 * snap + 1.5 * (time.monotonic() - t))

    def join_updates(self, timeout: float = 120.0) -> None:
        """Wait for a partial update still running (its result is dropped)."""
        if self.bg is not None:
            self.bg.join(timeout)

    def _publish(self, up: LiveUpdate, cres: Any, final: bool, gen: int) -> None:
        """Write ``cres``, fit it and hand ``up`` on, unless a later generation began."""
        from xpcsviewer.io.results.writer import write_result

        with self.lock:
            if gen != self.gen:
                return
            try:
                write_result(self.output, cres.result, saxs_2d=cres.saxs_2d, overwrite=True)
            except OSError as exc:
                raise self._left_on_disk(exc, "result", up) from None
            self.on_disk["result"] = {"path": str(self.output), "frames": up.frames,
                                      "partial": up.partial}
        if final:
            self.marks["write"] = time.monotonic()
        rec, fit_out = None, None
        if self.opts.fit and self.fitter is not None:
            from xpcsviewer.jobs.fitfile import record_bins
            from xpcsviewer.progress import Cancelled, CancelToken

            token = None
            if not final:
                with self.lock:
                    if gen != self.gen:
                        return
                    token = self.partial_cancel = CancelToken()
            try:
                o = self.fitter([str(self.output)], cancel=token)[0]
            except Cancelled:  # the final update began; its own fit follows
                return
            if o.ok:
                rec = o.record
                up.bins = record_bins(rec)
                fit_out = fit_output_path(self.output)
            else:
                up.fit_error = o.error
        with self.lock:
            if gen != self.gen:
                return
            if fit_out is not None:
                from xpcsviewer.fitting.results import write_fit_json

                try:
                    write_fit_json(fit_out, [rec])
                except OSError as exc:
                    raise self._left_on_disk(exc, "fit", up) from None
                self.on_disk["fit"] = {"path": str(fit_out), "frames": up.frames,
                                       "partial": up.partial}
                up.fit_output = str(fit_out)
            if final:
                done_wall = time.time()
                up.latency_s = (max(0.0, done_wall - self.seen_mtime) if self.seen_mtime
                                else None)
                self.marks["fit"] = time.monotonic()
                up.seen_to_result_s = self.marks["fit"] - self.seen_at
                up.stages = {k: (v if k == "end_partial" else v - self.seen_at)
                             for k, v in self.marks.items()}
            if self.with_view:
                up.view = self._view(cres.result, rec)
            self.updates += 1
            if self.on_update is not None:
                self.on_update(up)

    def _left_on_disk(self, exc: OSError, what: str, up: LiveUpdate) -> OSError:
        """``exc`` (a failed write of the result or its fits) saying what this run left
        on disk and whether it is partial (a full disk: the earlier files stay)."""
        from xpcsviewer.io.outputs import OutputWriteError, display_path

        head = str(exc).removesuffix("; nothing written")
        which = "final result" if up.final else f"partial result of {up.frames} frames"
        said = [f"the {which} was not written" if what == "result"
                else f"the fits of the {which} were not written"]
        res, fit = self.on_disk.get("result"), self.on_disk.get("fit")
        left = []
        if res is not None:
            kind = "partial result" if res["partial"] else "final result"
            left.append(f"{display_path(res['path'])} (the {kind} of {res['frames']} frames"
                        + (", /xpcs/live/partial = true)" if res["partial"] else ")"))
        if fit is not None:
            stale = " (not of the result beside it)" if res is not None and \
                res["frames"] != fit["frames"] else ""
            left.append(f"{display_path(fit['path'])} (the fits of the "
                        f"{'partial' if fit['partial'] else 'final'} result of "
                        f"{fit['frames']} frames{stale})")
        if left:
            partial = any(d["partial"] for d in (res, fit) if d is not None) or what == "fit"
            said.append("left on disk by this run: " + " and ".join(left)
                        + ("; partial" if partial else ""))
        else:
            said.append("nothing written by this run")
        err = OutputWriteError(exc.errno or errno.EIO, f"{head}; {'; '.join(said)}")
        err.left = {k: dict(v) for k, v in self.on_disk.items()}
        return err

    def _stats(self, final: bool, end: str | None, note: str) -> LiveUpdate:
        """The update's counts and rates, taken in the reader's thread."""
        now = time.monotonic()
        pt, pdone, pseen = self.prev
        dt = max(now - pt, 1e-9)
        rate = (self.done - pdone) / dt
        wrate = (self.seen - pseen) / dt
        if final and self.first_seen is not None:
            # the final says the averages over the acquisition
            t1 = self.first_seen
            rate = self.done / max(now - t1, 1e-9)
            # frames all seen at one poll: the writer's rate cannot be told (0)
            span = self.seen_at - t1
            wrate = self.seen / span if span > 1e-3 else 0.0
        self.prev = (now, self.done, self.seen)
        hit_rate = (self.hits - self.prev_hits) / dt
        if final and self.first_seen is not None:
            hit_rate = self.hits / max(now - self.first_seen, 1e-9)
        self.prev_hits = self.hits
        lag = max(0, self.seen - self.done)
        up = LiveUpdate(
            final=final, frames=self.done, elapsed_s=now - self.t0, frame_rate_hz=rate,
            writer_rate_hz=wrate, lag_frames=lag,
            lag_s=lag / wrate if wrate > 0 else (0.0 if lag == 0 else math.inf),
            output=str(self.output), expected=self.src_expected(), end=end,
            interval_s=self.interval,
            note="; ".join(x for x in (*self.notes, note) if x))
        if self.sparse:
            up.hits, up.hit_rate_hz = self.hits, hit_rate
        return up

    def _view(self, res: Any, rec: dict[str, Any] | None) -> LiveView:
        mt = res.multitau
        it = np.asarray(res.intensity_vs_time[1])
        x, y = _decimate(it, TRACE_POINTS)
        view = LiveView(tau=np.asarray(mt.tau), g2=np.asarray(mt.g2), g2_err=np.asarray(mt.g2_err),
                        valid=np.asarray(mt.valid), q=np.asarray(self.qmap.dynamic_q, float),
                        phi=np.asarray(self.qmap.dynamic_phi, float),
                        trace_t=x * float(self.frame_time), trace_i=y,
                        time_unit=self.time_unit)
        if rec is not None and mt.tau.size:
            from xpcsviewer.jobs.fitfile import record_curve

            t = np.geomspace(mt.tau[0], mt.tau[-1], 120)
            view.fit_t = t
            bins = rec.get("bins") or list(range(1, len(rec["q"]) + 1))
            for i, b in enumerate(bins):
                c = record_curve(rec, i, t)
                if c is not None:
                    view.fit_curves[int(b)] = np.asarray(c)
        return view
