"""The report a user takes home: every file's provenance, figures, fits with their
statuses and reasons, verdicts and data quality, as one self-contained HTML page and
the same as PDF (``xpcsviewer report``, the GUI's Report button, ``live --report``).

A floor between the GUI and ``export``: it draws with export's figure functions and
reads the fit table, the views and the jobs; nothing here imports Qt.
"""

from xpcsviewer.report.build import MAX_HTML_BYTES, ReportOutcome, collect_report, write_report

__all__ = ["MAX_HTML_BYTES", "ReportOutcome", "collect_report", "write_report"]
