"""Photon hits while a detector writes them: the sparse live sources.

Three layouts are followed (see :mod:`xpcsviewer.io.live_source` for the contract every
live source keeps: ``poll`` / ``final`` / ``release`` / ``close`` / ``describe`` /
``state``; files are opened read-only, never locked, never written). Each hands out the
hits of complete frames as an :class:`~xpcsviewer.io.sparse.EventBlock`
(:meth:`read_events`) and, for anything that wants frames, dense frames (:meth:`read`).
Only numpy and h5py.

Rules (docs/live.md states them for users)
------------------------------------------
**Rigaku ``.bin``** (:class:`GrowingRigakuSource`; one little-endian uint64 word per hit:
frame = bits 40-63, pixel = bits 16-36 into 512 x 1024, count = bits 0-11):

- complete frames are those before the frame of the last whole word written so far (the
  last frame may still be receiving words; a partial trailing word is ignored until it is
  whole); at the end (:meth:`~GrowingRigakuSource.final`) the last frame counts too;
- with an expected count N, frame N - 1 counts once it is the last frame seen and the
  file did not change between two polls;
- the file stores no writer flags: the writer counts as open while the file's size or
  modification time changed within ``close_grace`` seconds, as closed once it has not
  (with an expected count: once frame N - 1 is seen; before, a quiet file is a paused
  or dead writer, which the idle time ends);
- frames going backwards, a pixel outside the module (after folding the 8-ID-I offset of
  2**20, as the static reader does), a file that shrinks or is replaced: XpcsFileError
  naming the file and the word.

**ESRF ID10 CSR HDF5 file** (:class:`GrowingCsrSource`; ``entry_0000/measurement/data``
with ``frame_ptr`` (frames + 1), ``index``, ``intensity``, extended along axis 0):

- frame k is complete when ``frame_ptr[k + 1]`` is stored and ``<=`` the stored length of
  both ``index`` and ``intensity`` (a writer extends ``frame_ptr`` last; a pointer beyond
  the arrays is never followed);
- an entry equal to the dataset's fill value below its predecessor is an entry not
  written yet (a writer that extends before it writes): frames stop there; any other
  decrease is an error. While no frame has a hit yet (every pointer 0, the fill value),
  the frames are held until a hit arrives or the end: a 0 cannot be told from an entry
  not written yet;
- SWMR files stay open and are refreshed; any other file is opened afresh for every poll
  and its hits count only when a second fresh handle reads the same bytes (the care of
  :class:`~xpcsviewer.io.live_source.GrowingFileSource`);
- writer state: the superblock's flags, else a write lock, as for a dense growing file.

**Folder of ESRF sparse blocks** (:class:`CsrBlockFolderSource`; ``NAME_00000.h5``,
``NAME_00001.h5``, ...): block k is complete when block k + 1 exists; the newest when
nothing has it open for writing, its size and modification time did not change since
the previous poll and its pointer matches its arrays; at the end, the frames of it that
are whole when it opens.

The detector shape of a CSR file is its ``shape``/``frame_shape`` (or ``nrows`` /
``ncols``) attribute of the data group, else the caller's (the q-map's).
"""
from __future__ import annotations

from xpcsviewer.io._live_csr import CSR_GROUP, CsrBlockFolderSource, GrowingCsrSource
from xpcsviewer.io._live_rigaku import GrowingRigakuSource

__all__ = ["CSR_GROUP", "CsrBlockFolderSource", "GrowingCsrSource", "GrowingRigakuSource"]
