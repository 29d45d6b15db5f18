"""File-level work shared by the GUI and the command line: read -> compute/fit -> write.

``live``: follow an acquisition as it is written (:func:`xpcsviewer.jobs.live.follow`);
``series``: fits of a run of files against time, index or a metadata field;
``fitfile``: the ``fit`` command's own entry point for result files.
Modules are imported on use; nothing here imports Qt.
"""
