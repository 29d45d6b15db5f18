"""g2 tab: starting, following and cancelling the fits, and their export (a mixin)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xpcsviewer.fitting.bayes_units import CANCELLED_DETAIL
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.fitting.vocabulary import STATUS_ORDER
from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.panels._g2_jobs import bayes_all_job, fit_all_job, write_fits_job
from xpcsviewer.progress import CancelToken

__all__ = ["G2FitRunMixin"]


class G2FitRunMixin:
    """Least-squares and NUTS runs of :class:`~xpcsviewer.gui.panels.g2.G2Panel`."""

    # ---------------------------------------------------------------- fits
    def _fit_inputs(self):
        if not self.blocks:
            raise ValueError("no g2 curves shown to fit")
        overrides = self.params.overrides()
        opts = self.options()
        t_range = None
        if opts["tmin"] is not None and opts["tmax"] is not None:
            t_range = (opts["tmin"], opts["tmax"])
        return list(self.blocks), self.model(), overrides, t_range

    def run_fit(self) -> int | None:
        """Start the batched least-squares fit of every bin of the targets (all pages)
        in a worker; returns the request id."""
        try:
            blocks, model, overrides, t_range = self._fit_inputs()
        except ValueError as exc:
            self.context.report_error(f"g2 fit: {exc}")
            return None
        self._set_busy("fit", True)
        n_files = len({b.file_index for b in blocks})
        self.fit_status.setText(f"fitting every bin of {n_files} file(s)\u2026")
        return self.submit(
            "fit",
            fit_all_job,
            self.shown_results(),
            self.options(),
            model,
            overrides,
            t_range,
            on_result=self._on_fits,
            on_error=self._on_fit_error,
            description="g2: least-squares fit",
        )

    def run_bayes(self) -> int | None:
        """Start the NUTS fit of every bin of the targets (all pages) in a worker,
        a few bins at a time (progress per bin, the time left); Cancel stops it and
        keeps the bins finished. Returns the request id.

        With the automatic choice each curve is sampled with the model the least
        squares chose for it.
        """
        try:
            blocks, model, overrides, t_range = self._fit_inputs()
        except ValueError as exc:
            self.context.report_error(f"g2 Bayesian fit: {exc}")
            return None
        sampler = {
            "num_warmup": self.warmup.value(),
            "num_samples": self.samples.value(),
            "num_chains": self.chains.value(),
        }
        self._set_busy("bayes", True)
        self.progress.setValue(0)
        n_files = len({b.file_index for b in blocks})
        self.fit_status.setText(f"sampling (NUTS) every bin of {n_files} file(s)\u2026")
        self._bayes_stop = CancelToken()
        rid = self.context.runner.submit(
            self.job_key("bayes"),
            bayes_all_job,
            self.shown_results(),
            self.options(),
            model,
            overrides,
            t_range,
            sampler,
            self._bayes_stop,
            on_result=self._on_fits,
            on_error=self._on_fit_error,
            on_progress=self._on_bayes_progress,
            description="g2: Bayesian fit (NUTS)",
        )
        return rid

    def cancel_fit(self) -> None:
        """Cancel a running fit: the least squares, or the NUTS run, which keeps the
        bins it finished (the others keep their least-squares fit)."""
        self.context.runner.cancel(self.job_key("fit"))
        stop = getattr(self, "_bayes_stop", None)
        if stop is not None and self.job_key("bayes") in self._busy_keys:
            stop.cancel()
        self.fit_status.setText("cancelling\u2026")

    def _set_busy(self, purpose: str, busy: bool) -> None:
        if busy:
            self._busy_keys.add(self.job_key(purpose))
        else:
            self._busy_keys.discard(self.job_key(purpose))
        any_busy = bool(self._busy_keys)
        self.fit_btn.setEnabled(not any_busy)
        self.bayes_btn.setEnabled(not any_busy)
        self.cancel_btn.setEnabled(any_busy)

    def _on_job_finished(self, key: str, request_id: int) -> None:
        if key not in self._busy_keys:
            return
        if self.context.runner.latest_id(key) not in (None, request_id):
            return  # a newer job under this key is still running
        self._busy_keys.discard(key)
        any_busy = bool(self._busy_keys)
        self.fit_btn.setEnabled(not any_busy)
        self.bayes_btn.setEnabled(not any_busy)
        self.cancel_btn.setEnabled(any_busy)
        if self.fit_status.text().startswith(("cancelling", "sampling", "fitting")):
            self.fit_status.setText("cancelled")

    def _on_bayes_progress(self, done: int, total: int, msg: str) -> None:
        if total > 0:
            self.progress.setValue(int(1000 * done / total))
        self.fit_status.setText(f"sampling (NUTS): {msg}")

    def _on_fit_error(self, info) -> None:
        self.fit_status.setText(f"fit failed: {info.message}")
        self.context.report_error(info)

    def _on_fits(self, fits: G2Fits) -> None:
        # The fit is done when its result arrives (its "finished" signal comes
        # later): the buttons are usable again now.
        for purpose in ("fit", "bayes"):
            self._set_busy(purpose, False)
        self.fits = fits
        self.progress.setValue(1000)
        self._update_shown_fits()
        self.context.set_shared("g2_fits", fits)
        self._pending_fits_signal = fits  # emitted once the curves are drawn
        self._draw_fits()

    def _update_shown_fits(self) -> None:
        """Keep of :attr:`fits` only what was fitted from the curves shown now with
        the selected model; table, status line and export follow (GUI thread)."""
        from collections import Counter

        fits = self.fits
        shown = None
        if fits is not None and fits.model == self.model():
            shown = fits.for_blocks(self.blocks)
        self.shown_fits = shown
        self.results_table.show_fits(shown)
        self.export_fits_btn.setEnabled(shown is not None)
        if self._busy_keys:
            return  # "fitting…" / "sampling…" stays until the result arrives
        if fits is None:
            from xpcsviewer.gui.panels.g2 import NO_FIT_TEXT

            self.fit_status.setText(NO_FIT_TEXT)
            return
        what = f"{fits.method} {fits.model}"
        if shown is None:
            if fits.model != self.model():
                why = f"the last fit ({what}) is of another model than {self.model()}"
            else:
                why = (f"the last fit ({what}, {fits.n_curves} curves) was of other "
                       "curves (other files, bins, points or data)")
            self.fit_status.setText(f"{why}: not drawn; press Fit or Bayesian")
            self.progress.setValue(0)
            return
        counts = Counter(str(x) for x in shown.status)
        parts = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in STATUS_ORDER
                          if counts[k])
        text = f"{what}, {shown.n_curves} curves: {parts}"
        if shown.diagnostics is not None and "draws" in shown.diagnostics and shown.bands:
            asked = min(res.num_samples for _, res in shown.bands)
            n_long = int(np.sum(shown.diagnostics["draws"] > asked))
            if n_long:  # the extension round (fitting.bayes): said, not hidden
                text += f"; {n_long} sampled longer"
        n_other = fits.n_curves - shown.n_curves
        if n_other:
            text += f" ({n_other} more fitted on other pages or files)"
        stopped = int(np.sum(fits.detail == CANCELLED_DETAIL)) if fits.detail is not None else 0
        if stopped:
            text += (f"; stopped: {stopped} of {fits.n_curves} bins kept their "
                     "least-squares fit")
        n_unfitted = sum(b.n_bins for b in self.blocks) - shown.n_curves
        if n_unfitted > 0:
            text += f"; {n_unfitted} shown curves not fitted"
        self.fit_status.setText(text)

    def export_fits(self, path: str) -> int | None:
        """Write the fits of the shown curves to ``path`` (CSV, or JSON for ``.json``)
        in a worker."""
        if self.shown_fits is None:
            self.context.report_error("g2: no fits of the shown curves to export")
            return None
        return self.submit(
            "export-fits",
            write_fits_job,
            self.shown_fits,
            str(path),
            on_result=self._on_exported,
            description=f"Exporting {Path(path).name}",
        )

    def _on_export_fits(self) -> None:
        path = ask_save_path(self, self.context, "Export g2 fits", "g2_fits.csv",
                             "CSV (*.csv);;JSON (*.json)")
        if path:
            self.export_fits(path)
