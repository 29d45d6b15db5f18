"""Result-file reader and writer, raw-frame and q-map readers (NumPy and h5py only)."""

from xpcsviewer.io.errors import XpcsFileError

__all__ = ["XpcsFileError"]
