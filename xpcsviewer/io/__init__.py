"""Result-file reader and writer, raw-frame and q-map readers (NumPy and h5py only).

Two rooms over a shared floor: :mod:`xpcsviewer.io.results` (the result files: model,
reader, writer, their optional parts) and :mod:`xpcsviewer.io.raw` (raw detector data, one
module per layout, and the live readers), both on the HDF5 layer here (``_h5``,
``_h5open``, ``_h5links``, ``_links``, ``outputs``, ``errors``); ``masks`` reads and writes
mask files. The names below are the public ones, as before.
"""

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results.reader import (
    C2View,
    FileSummary,
    get_analysis_type,
    read_c2,
    read_g2_stack_delay,
    read_qmap,
    read_result,
    read_saxs_2d,
    scan_folder,
)
from xpcsviewer.io.results.writer import write_qmap_file, write_result
from xpcsviewer.model.result import Multitau, QMap, Twotime, XpcsResult

__all__ = [
    "C2View",
    "FileSummary",
    "Multitau",
    "QMap",
    "Twotime",
    "XpcsFileError",
    "XpcsResult",
    "get_analysis_type",
    "read_c2",
    "read_g2_stack_delay",
    "read_qmap",
    "read_result",
    "read_saxs_2d",
    "scan_folder",
    "write_qmap_file",
    "write_result",
]
