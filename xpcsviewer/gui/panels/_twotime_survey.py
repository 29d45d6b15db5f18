"""Every q-bin of the Two-Time tab's file analysed by age, one worker job after another
(issue 49): the per-bin verdict line above the plots, the bin the tab opens on (the
first with a determined law) and outcomes kept, so a bin change with the same settings
draws at once.

The shown bin is analysed first (``AgesView.start``); the others follow in bin order,
each a job under the panel's one ``ages`` key, so a new request cancels the survey and
the survey resumes after it. Outcomes are kept only for one file and one setting.
"""

from __future__ import annotations

from html import escape
from typing import Any

from xpcsviewer.views import ages as av

__all__ = ["BinSurvey"]

_CANCELLED = "cancelled"


def _setting(req: Any) -> tuple:
    """What the outcomes of two requests share: the file and the windows and model."""
    return (req.path, req.n_frames, req.t0, req.spacing, req.n, req.ages, req.widths,
            req.model)


class BinSurvey:
    """The outcomes of every bin of one file and setting, and what they say."""

    def __init__(self) -> None:
        self.requests: list[Any] = []  #: one per bin of the file, in bin order
        self.outcomes: dict[Any, Any] = {}
        self.errors: dict[Any, str] = {}
        self._setting: tuple | None = None
        #: (path, bin index) of a file just shown: move to a bin with a law once known
        self._pick: tuple[str, int] | None = None
        self._picked_path: str | None = None

    def reset(self, requests: list[Any]) -> None:
        """Follow ``requests`` (every bin of the shown file); outcomes of another file or
        setting are dropped; a file not shown before arms the opening pick."""
        if not requests:
            self.requests, self.outcomes, self.errors, self._setting = [], {}, {}, None
            return
        key = _setting(requests[0])
        if key != self._setting:
            self.outcomes, self.errors, self._setting = {}, {}, key
        else:  # what was cancelled is asked again
            self.errors = {r: m for r, m in self.errors.items() if m != _CANCELLED}
        self.requests = list(requests)

    def arm(self, req: Any) -> None:
        """Open ``req``'s file on a bin with a law, unless the user moves first."""
        if req.path != self._picked_path:
            self._picked_path = req.path
            self._pick = (req.path, int(req.index))
        elif self._pick is not None and int(req.index) != self._pick[1]:
            self._pick = None  # the user chose a bin

    def store(self, outcome: Any) -> None:
        if _setting(outcome.request) == self._setting:
            self.outcomes[outcome.request] = outcome

    def fail(self, req: Any, message: str) -> None:
        if _setting(req) == self._setting:
            self.errors[req] = message

    def cancel_rest(self, message: str = _CANCELLED) -> None:
        """The bins not analysed yet are not analysed (Cancel, another file, or the
        shown bin failed: ``message``)."""
        for r in self.requests:
            if r not in self.outcomes:
                self.errors.setdefault(r, message)

    def next_request(self) -> Any | None:
        """The first bin neither analysed nor failed, or None when all are."""
        return next((r for r in self.requests
                     if r not in self.outcomes and r not in self.errors), None)

    def _determined(self, req: Any, law: str) -> bool:
        o = self.outcomes[req]
        return o.fits.laws[law][0].verdict != "undetermined"

    def pick(self, law: str) -> int | None:
        """The bin index to open on once known (the first with a determined law; the
        first bin when none has one), or None: stay (the shown bin has a law, the user
        moved, or earlier bins are still analysed)."""
        if self._pick is None:
            return None
        path, shown = self._pick
        by_index = {int(r.index): r for r in self.requests}
        cur = by_index.get(shown)
        if cur is None or path != cur.path:
            return None
        if cur in self.outcomes and self._determined(cur, law):
            self._pick = None
            return None
        for r in self.requests:
            if r in self.errors:
                continue
            if r not in self.outcomes:
                return None  # an earlier bin is not known yet
            if self._determined(r, law):
                self._pick = None
                return None if int(r.index) == shown else int(r.index)
        self._pick = None
        first = int(self.requests[0].index)
        return None if first == shown else first

    def verdict_line(self, law: str) -> str:
        """"ageing law τ = τ₀·t_w^μ by q-bin: bin 1: undetermined: …; bin 2: μ = 0.86
        [0.6, 1.1]: ageing; …" (rich text), with the bins still being analysed."""
        if not self.requests:
            return " "
        parts, n_law = [], 0
        for r in self.requests:
            if r in self.outcomes:
                text = av.law_verdict(self.outcomes[r].fits, 0, law)
                n_law += self._determined(r, law)
            elif r in self.errors:
                text = f"not analysed: {self.errors[r]}"
            else:
                text = "analysing\u2026"
            parts.append(f"<b>bin {r.dq}</b>: {escape(text)}")
        form = ("\u03c4 = \u03c4\u2080 + a\u00b7t_w" if law == "linear"
                else "\u03c4 = \u03c4\u2080\u00b7t_w^\u03bc")
        done = all(r in self.outcomes or r in self.errors for r in self.requests)
        head = f"Ageing law {form} by q-bin"
        if done and n_law == 0 and self.outcomes:
            head += " (no q-bin has a determined law)"
        return head + ": " + "; ".join(parts)
