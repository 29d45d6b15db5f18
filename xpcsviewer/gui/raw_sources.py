"""Raw sources in the window (issue 45): :class:`RawTarget` and the shared keys the
browser, the Raw tab, the Detector tab and the correlate dialog agree on.

A raw source never enters the result target list: the window puts it in the list under
:data:`RAW_SOURCES_KEY` and shows it in the Raw tab (:data:`RAW_CURRENT_KEY`). What a
file is comes from :func:`xpcsviewer.io.classify.classify_path` (headers only).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xpcsviewer.io.classify import FileKind, classify_path, qmap_beside

__all__ = ["RAW_CURRENT_KEY", "RAW_EXCLUDE_KEY", "RAW_MEAN_IMAGE_KEY", "RAW_SOURCES_KEY",
           "FileKind", "RawTarget", "classify_path", "raw_target"]

#: shared key: ``list[RawTarget]``, the raw sources opened in the window
RAW_SOURCES_KEY = "raw_sources"
#: shared key: the :class:`RawTarget` the Raw tab shows (None: none)
RAW_CURRENT_KEY = "raw_current"
#: shared key: ``(path, [(first, last), ...])`` frames to leave out of a correlation
RAW_EXCLUDE_KEY = "raw_exclude_frames"
#: shared key: ``(path, image)``, the Raw tab's mean image of a source ((H, W) float64);
#: the Detector tab draws a raw source's mask over it
RAW_MEAN_IMAGE_KEY = "raw_mean_image"


@dataclass(frozen=True)
class RawTarget:
    """A raw source opened in the window.

    Attributes
    ----------
    path : str
        What the readers open (a file; the first module of a Rigaku 3M, the first block
        of an ESRF series).
    layout : str
        The raw layout (``"hdf5"``, ``"npy"``, ``"rigaku"``, ``"rigaku-3m"``,
        ``"esrf-csr"``, ``"id11-sparse"``, ``"timepix"``).
    label : str
        The name shown (``NAME.bin.000-005`` for a 3M set).
    qmap_path : str or None
        Its q-map: the file the demo pairs it with (``NAME_qmap.h5`` beside it), or the
        one the user picked; None until there is one.
    frame_time : float or None
        Seconds per frame when known (for a Timepix list: :attr:`bin_time`).
    bin_time : float or None
        Timepix lists only: the frame length (s) they are cut into; the default comes
        from the file (:attr:`FileKind.bin_time`), the Raw tab may change it.
    """

    path: str
    layout: str
    label: str
    qmap_path: str | None = None
    frame_time: float | None = None
    bin_time: float | None = None


def raw_target(path: str | os.PathLike, kind: FileKind | None = None,
               label: str | None = None) -> RawTarget | None:
    """The :class:`RawTarget` for ``path`` (classified here unless ``kind`` is given),
    with the q-map beside it; None when ``path`` is not a raw source."""
    fk = kind if kind is not None else classify_path(path)
    if fk.kind != "raw" or fk.layout is None:
        return None
    p = str(path)
    if label is None:
        label = Path(p).name
        if fk.layout == "rigaku-3m":
            label = Path(fk.files[0]).name[:-4] + ".000-005" if fk.files else label
        elif fk.layout == "esrf-csr" and len(fk.files) > 1:
            label = f"{Path(fk.files[0]).name} (+{len(fk.files) - 1} blocks)"
    bin_time = fk.bin_time if fk.layout == "timepix" else None
    return RawTarget(p, fk.layout, label, qmap_beside(p), fk.frame_time or bin_time,
                     bin_time)
