"""File-level work shared by the GUI and the command line: read -> compute / fit -> write.

The only place where files and computation meet; the array code is in ``compute``
and ``fitting``, the readers and writers in ``io``. ``average``: repeats into one file;
``regroup``: a per-pixel stack with another partition; ``live``: follow an acquisition
as it is written (:func:`xpcsviewer.jobs.live.follow`); ``series``: fits of a run of
files against time, index or a metadata field; ``fitfile``: the ``fit`` command's own
entry point for result files; ``ages_bin`` and ``figure_inputs``: the analyses the
export figures are handed (ADR-8). Modules are imported on use; nothing here imports Qt.
"""
