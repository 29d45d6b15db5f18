"""Raw detector data: one module per layout, each holding its layout's names and decoding
once, and the machinery every layout shares (docs/decisions.md, ADR-8).

- :mod:`~xpcsviewer.io.raw.dense`: dense frames (HDF5 ``/entry/data/data``, Eiger
  master files, ``.npy``), :class:`RawFrames`;
- :mod:`~xpcsviewer.io.raw.rigaku`: APS Rigaku XSPA ``.bin`` (one module, the six of a 3M);
- :mod:`~xpcsviewer.io.raw.esrf_csr`: ESRF ID10 CSR (a file, a block series, a folder);
- :mod:`~xpcsviewer.io.raw.id11`: ImageD11 sparse; :mod:`~xpcsviewer.io.raw.timepix`:
  Timepix event lists;
- shared: :mod:`~xpcsviewer.io.raw.sparse` (the sparse source, its frame selection and
  event blocks), :mod:`~xpcsviewer.io.raw.util` (detector shape, group search, checked
  1-D datasets), :mod:`~xpcsviewer.io.raw.source` (:func:`open_raw_source`, by content);
- live (a file or folder being written): :mod:`~xpcsviewer.io.raw.live`
  (:func:`~xpcsviewer.io.raw.live.open_live_source`), and per layout
  ``live_dense``, ``live_blocks``, ``live_rigaku``, ``live_csr`` over ``live_common`` and
  ``live_hits``.

Only numpy and h5py; a layout's module is imported when a source of it is opened.
"""

from xpcsviewer.io.raw.dense import MIN_FRAMES, RAW_DATASET, RawFrames, file_kind, open_raw
from xpcsviewer.io.raw.source import RAW_LAYOUTS, open_raw_source, raw_layout

__all__ = [
    "MIN_FRAMES",
    "RAW_DATASET",
    "RAW_LAYOUTS",
    "RawFrames",
    "file_kind",
    "open_raw",
    "open_raw_source",
    "raw_layout",
]
