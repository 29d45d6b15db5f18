"""Result-file reader and writer, raw-frame and q-map readers (NumPy and h5py only)."""

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.model import Multitau, QMap, Twotime, XpcsResult
from xpcsviewer.io.reader import (
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
from xpcsviewer.io.writer import write_qmap_file, write_result

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
