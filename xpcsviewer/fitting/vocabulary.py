"""The words of a g2 fit, said once: the model names the command line and the g2 tab
offer, how they are named in a reason, and the order and colours of the fit statuses.

Pure Python (no NumPy, no Qt): the command line reads it on every ``--help``.
"""

from __future__ import annotations

__all__ = [
    "FIT_MODELS",
    "MODEL_CHOICES",
    "MODEL_LABELS",
    "MODEL_MENU",
    "ROUGH_STATUSES",
    "STATUS_COLORS",
    "STATUS_ORDER",
]

#: The g2 models, simplest first (values of :class:`~xpcsviewer.fitting.models.G2Model`).
FIT_MODELS = ("single", "stretched", "double", "single_avgcorr")
#: What ``--model`` and the g2 tab offer: "auto" (every model fitted, one chosen per
#: curve by AICc) first, the default.
MODEL_CHOICES = ("auto", *FIT_MODELS)

#: A chosen model in a status reason ("... favours the stretched exponential").
MODEL_LABELS = {
    "single": "single exponential",
    "stretched": "stretched exponential",
    "double": "double exponential",
    "single_avgcorr": "frame-averaged single exponential",
}

#: The g2 tab's model list: the model and its formula.
MODEL_MENU = {
    "auto": "automatic (AICc)",
    "single": "single exp: b + a\u00b7exp(\u22122t/\u03c4)",
    "stretched": "stretched: b + a\u00b7exp(\u22122(t/\u03c4)^s)",
    "double": "double: b + a\u00b7[f\u00b7e\u2081 + (1\u2212f)\u00b7e\u2082]\u00b2",
    "single_avgcorr": "single exp, frame-averaging corrected",
}

#: Fit statuses (values of :class:`~xpcsviewer.fitting.status.FitStatus`), good first:
#: the order in which counts of them are told.
STATUS_ORDER = ("converged", "unresolved", "at_bound", "misfit", "poor_fit",
                "errors_understated", "no_decay", "failed")
#: Statuses whose tau is known only roughly or as a limit: drawn as open markers.
ROUGH_STATUSES = ("unresolved", "at_bound")
#: Light backgrounds by status, "#rrggbb" (pyqtgraph, Qt and matplotlib read it); text
#: on them is drawn black.
STATUS_COLORS = {
    "converged": "#cdf0cd",
    "unresolved": "#fff0be",
    "at_bound": "#fff0be",
    "poor_fit": "#ffd7aa",
    "misfit": "#f0cdf0",
    "errors_understated": "#d2dcf0",
    "no_decay": "#e1e1e1",
    "failed": "#ffc8c8",
}
