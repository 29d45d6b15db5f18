"""The Detector tab's raw sources (issue 45): a mask history for each raw source opened
in the window, beside those of the result files.

A raw source (:class:`~xpcsviewer.gui.raw_sources.RawTarget`, listed under
:data:`~xpcsviewer.gui.raw_sources.RAW_SOURCES_KEY`) is picked in the tab's file selector
(``raw: NAME``), or shown when the Raw tab makes it current
(:data:`~xpcsviewer.gui.raw_sources.RAW_CURRENT_KEY`). Its initial mask is its q-map's
mask (all pixels without a q-map); the image under the mask is the Raw tab's mean image
(:data:`~xpcsviewer.gui.raw_sources.RAW_MEAN_IMAGE_KEY`), a blank frame until there is
one. A :class:`~._pixel_audit_box.MaskRequest` for its path (the Raw tab's "Mask these")
becomes one undoable step, and the mask is published under ``MASK_KEY`` as a result
file's is (the correlate dialog reads it). Raw sources' masks are not kept across
sessions. The q-map is read in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.gui.raw_sources import (
    RAW_CURRENT_KEY,
    RAW_MEAN_IMAGE_KEY,
    RAW_SOURCES_KEY,
    RawTarget,
)

__all__ = ["DetectorRawMixin", "RawSubject", "raw_image_job", "raw_subject_job"]


@dataclass(frozen=True)
class RawSubject:
    """What the Detector tab needs of a raw source: its q-map (None: none picked) and
    detector shape. ``path`` and ``label`` as a result's, so the tab's code serves both."""

    path: str
    label: str
    qmap: Any
    shape: tuple[int, int]
    qmap_path: str | None = None


def raw_subject_job(target: RawTarget, progress=None, cancel=None) -> RawSubject:
    """Worker job: read the q-map of ``target`` (the detector shape without one: from
    the source's header).

    Raises
    ------
    XpcsFileError
        An unreadable q-map, or no q-map and a source that states no detector shape.
    """
    from xpcsviewer.io.errors import XpcsFileError

    qmap = None
    if target.qmap_path:
        from xpcsviewer.io.results.reader import read_qmap

        qmap = read_qmap(target.qmap_path)
        shape = tuple(int(n) for n in qmap.shape)
    else:
        from xpcsviewer.io.classify import classify_path

        shape = classify_path(target.path).detector_shape
        if shape is None:
            raise XpcsFileError(target.path, "the detector shape is unknown: the source "
                                "states none and no q-map is picked", None,
                                "a q-map of this detector (pick one in the Raw tab)")
    return RawSubject(target.path, target.label, qmap, (int(shape[0]), int(shape[1])),
                      target.qmap_path)


def raw_image_job(subject: RawSubject, image: np.ndarray | None, progress=None,
                  cancel=None) -> dict:
    """Worker job: the display of a raw source's mean image (a blank frame of its
    detector's shape when there is none yet), as ``prepare_saxs2d`` returns it."""
    from xpcsviewer.gui.panels.saxs2d import rescale_saxs2d

    blank = image is None or tuple(np.shape(image)) != subject.shape
    raw = np.zeros(subject.shape) if blank else np.asarray(image, dtype=np.float64)
    out = rescale_saxs2d(raw, "log")
    out.update(raw=raw, path=subject.path, blank=blank)
    return out


class DetectorRawMixin:
    """Raw sources in :class:`~xpcsviewer.gui.panels.detector.DetectorPanel`."""

    def _init_raw(self) -> None:
        self.raw_targets: list[RawTarget] = []
        #: the raw source shown (None: the current result file)
        self.raw_current: RawTarget | None = None
        self.raw_subjects: dict[str, RawSubject] = {}
        self.raw_images: dict[str, np.ndarray] = {}
        self._raw_pending: dict[str, list] = {}  # mask requests waiting for the q-map
        self.context.sigSharedChanged.connect(self._on_raw_shared)

    def raw_keys(self) -> set[str]:
        """The paths of the raw sources that have a mask history (not kept on disk)."""
        return {p for p in self.raw_subjects if p in self.histories}

    def subject(self) -> Any | None:
        """What the tab shows: the raw source's :class:`RawSubject` (None while its
        q-map is read) or the current result."""
        if self.raw_current is not None:
            return self.raw_subjects.get(self.raw_current.path)
        return self.current_result()

    def applies_to(self, results: list[Any]) -> str | None:
        if not results and not self.raw_targets:
            return "Select one or more result files, or open a raw source, first"
        return None

    def set_current(self, index: int) -> None:
        # a result made current (the target list) takes the tab back from a raw source
        if self.raw_current is not None and self.results:
            self.raw_current = None
            self.current_index = max(0, int(index))
            self._dirty = True
            if self.isVisible():
                self._refresh_now()
            return
        super().set_current(index)

    def _file_labels(self) -> None:
        labels = [r.label for r in self.results] + [f"raw: {t.label}" for t in self.raw_targets]
        cur = self.current_index
        if self.raw_current is not None:
            paths = [t.path for t in self.raw_targets]
            if self.raw_current.path in paths:
                cur = len(self.results) + paths.index(self.raw_current.path)
        self.file_selector.set_labels(labels, cur)

    def _on_file_chosen(self, i: int) -> None:
        """The file selector: a result (its index) or a raw source (after them)."""
        n = len(self.results)
        if i >= n:
            self.raw_current = self.raw_targets[i - n]
        else:
            self.raw_current = None
            self.current_index = i
        self.refresh()

    # ---------------------------------------------------------------- shared
    def _on_raw_shared(self, key: str) -> None:
        shared = self.context.shared
        if key == RAW_SOURCES_KEY:
            self.raw_targets = list(shared.get(RAW_SOURCES_KEY) or [])
            paths = [t.path for t in self.raw_targets]
            if self.raw_current is not None:
                self.raw_current = (self.raw_targets[paths.index(self.raw_current.path)]
                                    if self.raw_current.path in paths else None)
            self._raw_dirty()
        elif key == RAW_CURRENT_KEY:
            t = shared.get(RAW_CURRENT_KEY)
            if t is not None:
                self.raw_current = t
                self._raw_dirty()
        elif key == RAW_MEAN_IMAGE_KEY:
            value = shared.get(RAW_MEAN_IMAGE_KEY)
            if value is None:
                return
            path, image = value
            self.raw_images[str(path)] = image
            if self.raw_current is not None and self.raw_current.path == str(path):
                self._raw_dirty()

    def _raw_dirty(self) -> None:
        self._dirty = True
        if self.isVisible():
            self._refresh_now()
        else:
            self._file_labels()

    # ----------------------------------------------------------------- loading
    def _refresh_raw(self) -> None:
        t = self.raw_current
        subj = self.raw_subjects.get(t.path)
        if subj is None or subj.qmap_path != t.qmap_path:
            self.mask_tools.set_history_state(False, False, f"Loading {t.label}\u2026")
            # a key per source: a request for another source must not cancel this one
            self.submit(f"raw-subject:{t.path}", raw_subject_job, t,
                        on_result=self._on_raw_subject,
                        description=f"Detector: q-map of {t.label}")
            return
        self.submit("image", raw_image_job, subj, self.raw_images.get(t.path),
                    on_result=self._on_image, description=f"Detector {t.label}")

    def _on_raw_subject(self, subj: RawSubject) -> None:
        old = self.raw_subjects.get(subj.path)
        self.raw_subjects[subj.path] = subj
        h = self.histories.get(subj.path)
        if h is not None and (h.version == 0 or h.shape != subj.shape) and (
                old is None or old.qmap_path != subj.qmap_path):
            # another q-map: its mask is the new start (nothing drawn would be lost)
            self.histories.pop(subj.path)
        for req in self._raw_pending.pop(subj.path, []):
            self.apply_raw_mask_request(req)
        if self.raw_current is not None and self.raw_current.path == subj.path:
            self._refresh_raw()

    # ------------------------------------------------------------ mask requests
    def apply_raw_mask_request(self, req: Any) -> bool | None:
        """Mask ``req``'s pixels in the mask of the raw source at ``req.path`` (one
        undoable step); None when no raw source has that path."""
        from xpcsviewer.gui.panels._pixel_audit_box import exclude_request

        t = next((r for r in self.raw_targets if r.path == req.path), None)
        if t is None:
            return None
        self.raw_current = t
        subj = self.raw_subjects.get(t.path)
        if subj is None or subj.qmap_path != t.qmap_path:
            self._raw_pending.setdefault(t.path, []).append(req)
            self._refresh_raw()  # reads the q-map, then applies the request
            self.context.show_status(f"Detector: {req.what}: reading the q-map of {t.label}")
            return True
        h = self.histories.get(t.path)
        if h is None:
            h = self._new_history(subj)
        done = exclude_request(self, h, req)
        self._dirty = True
        if self.isVisible():
            self._refresh_now()
        else:
            self._file_labels()
        return done

    def _plain_pixel(self, y: float, x: float) -> tuple[int, int, str | None]:
        """(row, col, readout) of a pixel of an image without a q-map (None: outside)."""
        row, col = int(np.floor(y)), int(np.floor(x))
        h, w = self.data["raw"].shape
        if not (0 <= row < h and 0 <= col < w):
            return row, col, None
        return row, col, f"row {row}, col {col}: {float(self.data['raw'][row, col]):.4g}"

    def _raw_geometry_key(self, subj: RawSubject) -> tuple:
        from xpcsviewer.gui.image_view import frame_key

        if subj.qmap is not None:
            return frame_key(subj.qmap)
        return (tuple(subj.shape), 0.0, 0.0)
