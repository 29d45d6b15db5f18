"""Detector tab: mask editor and partition editor on the SAXS-2D image.

*Mask*: draw rectangles, circles, ellipses, polygons, lines with a width, or erase
(:mod:`~xpcsviewer.gui.panels._mask_tools`), threshold on intensity, undo / redo /
reset, load and save masks (HDF5 ``/qmap/mask``, as pySimpleMask reads them). The
mask starts as the file's own and is kept per file while the app runs.
A drawn mask outlives the session: it is kept in the config folder (a worker writes it
after each change; the window writes what is left at close) and put back, as one
undoable step, when its file is opened again with the same geometry.
*Partition*: q, phi or q x phi bins, linear or log, phi offset and symmetry fold, with
a live preview and the pixels per bin (:mod:`~xpcsviewer.gui.panels._partition_editor`);
"Save q-map" writes the file ``xpcsviewer qmap`` writes (the same ``make_partition``).
Both are offered to the G2 tab's regrouping (``context.shared["detector_mask"]`` and
``["drawn_partition"]``). Rasterizing, thresholding, partitioning and writing run in
workers; the GUI thread only swaps images.
Raw sources have masks too (:mod:`~xpcsviewer.gui.panels._detector_raw`): the tab
shows a "subject", the current result or a raw source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.compute.detector.masking import MaskHistory
from xpcsviewer.gui import session as session_mod
from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.image_view import colour_table, data_box, frame_image, frame_key
from xpcsviewer.gui.panels._detector_jobs import (
    MaskStep,
    PartitionPreview,
    keep_mask_job,
    mask_step_job,
    partition_job,
    read_kept_mask_job,
    save_mask_job,
    save_qmap_job,
)
from xpcsviewer.gui.panels._detector_raw import DetectorRawMixin, RawSubject
from xpcsviewer.gui.panels._drawing import DrawViewBox, MaskOverlayItem, mask_overlay
from xpcsviewer.gui.panels._mask_tools import MaskTools
from xpcsviewer.gui.panels._partition_editor import PartitionEditor
from xpcsviewer.gui.panels._pixel_audit_box import MASK_REQUEST_KEY, apply_mask_request
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.panels.saxs2d import prepare_saxs2d
from xpcsviewer.gui.widgets import FileSelector, colormap
from xpcsviewer.views.display_image import pixel_info

__all__ = ["DetectorMask", "DetectorPanel", "DrawnPartition"]

MASK_KEY = "detector_mask"
PARTITION_KEY = "drawn_partition"


@dataclass(frozen=True)
class DetectorMask:
    """The Detector tab's mask of one file (True = valid; read-only array)."""

    path: str
    mask: np.ndarray
    n_masked: int


@dataclass(frozen=True)
class DrawnPartition:
    """A partition made in the Detector tab (its mask included)."""

    path: str
    qmap: Any
    settings: dict


def _load_mask_job(path: str, shape: tuple[int, int], current: np.ndarray, version: int,
                   progress=None, cancel=None) -> MaskStep:
    from xpcsviewer.io.masks import read_mask

    new = read_mask(path, shape)
    return MaskStep(new, np.packbits(np.asarray(current, bool), axis=None).tobytes(),
                    int(version), int((new != current).sum()), f"loaded {Path(path).name}")


class DetectorPanel(DetectorRawMixin, BasePanel):
    """Mask and partition editor on the time-averaged detector image."""

    name = "detector"
    title = "Detector"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.data: dict | None = None
        self.histories: dict[str, MaskHistory] = {}
        self._geometry_of: dict[str, tuple] = {}  # path -> (shape, bcx, bcy) of its mask
        #: path -> the history version kept in the config folder (see persist)
        self.kept: dict[str, int] = {}
        #: path -> a mask of the last session not yet put back (its file not opened yet)
        self.to_restore: dict[str, dict] = {}
        self._pending_erase: list | None = None
        self.preview: PartitionPreview | None = None
        self._frame: tuple | None = None  # frame_key of the image framed last
        outer = QHBoxLayout(self)
        split = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(split)
        left = QWidget()
        lv = QVBoxLayout(left)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.setMinimumContentsLength(12)
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        bar.addWidget(QLabel("File"))
        bar.addWidget(self.file_selector)
        bar.addStretch(1)
        lv.addLayout(bar)
        self.view = DrawViewBox()
        self.view.invertY(True)
        self.view.setAspectLocked(True)
        self.plot_widget = pg.PlotWidget(viewBox=self.view)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setLabel("bottom", "column (pixel)")
        self.plot.setLabel("left", "row (pixel)")
        # uint8 colour indices from the worker: shown through a 256-entry table, with
        # no pass over the pixels on the GUI thread
        self.image_item = pg.ImageItem()
        self.image_item.setLookupTable(colour_table(colormap("viridis")))
        # overlays at full resolution: pyqtgraph's autoDownsample averages the whole
        # (H, W, 4) array on the GUI thread at every repaint (seconds at 3.5 Mpixel);
        # uint8 images go through a lookup table once per change instead
        self.preview_item = pg.ImageItem()
        self.mask_item = MaskOverlayItem()  # lone masked pixels kept when zoomed out
        for z, it in enumerate((self.image_item, self.preview_item, self.mask_item)):
            it.setZValue(z)
            self.view.addItem(it)
        # a plain "+" (a scatter point would take the clicks meant for the drawing tools)
        self.center_item = pg.PlotCurveItem(pen=pg.mkPen("r", width=2), connect="pairs")
        self.center_item.setZValue(5)
        self.view.addItem(self.center_item)
        lv.addWidget(self.plot_widget, 1)
        self.readout = QLabel(" ")
        lv.addWidget(self.readout)
        split.addWidget(left)
        self.tabs = QTabWidget()
        self.mask_tools = MaskTools(self.view)
        self.editor = PartitionEditor()
        self.tabs.addTab(self.mask_tools, "Mask")
        self.tabs.addTab(self.editor, "Partition")
        self.tabs.setMinimumWidth(330)
        self.tabs.setMaximumWidth(460)  # the image takes the rest
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 1)
        split.setSizes([1000, 380])
        self.tabs.currentChanged.connect(lambda _i: self._show_preview())
        mt = self.mask_tools
        mt.install_shortcuts(self)
        mt.sigApply.connect(self._on_apply_shapes)
        mt.sigThreshold.connect(self._on_threshold)
        mt.sigUndo.connect(lambda: self._history_action("undo"))
        mt.sigRedo.connect(lambda: self._history_action("redo"))
        mt.sigReset.connect(lambda: self._history_action("reset"))
        mt.sigLoad.connect(self._on_load_mask)
        mt.sigSave.connect(self._on_save_mask)
        mt.sigShowMask.connect(self.mask_item.setVisible)
        ed = self.editor
        ed.sigSettingsChanged.connect(self.schedule_partition)
        ed.sigShowChanged.connect(lambda _k: self._show_preview())
        ed.sigUse.connect(self.use_partition)
        ed.sigSave.connect(self._on_save_qmap)
        ed.sigFromFile.connect(self._on_from_file)
        # "Mask these" of the G2 tab's pixel audit
        context.sigSharedChanged.connect(lambda key: apply_mask_request(
            self, context.shared[key]) if key == MASK_REQUEST_KEY else None)
        self._init_raw()
        self._partition_timer = QTimer(self, singleShot=True, interval=300)
        self._partition_timer.timeout.connect(self.run_partition)
        self._proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                     slot=self._on_mouse_moved)
        self._update_history_state()

    # ----------------------------------------------------------------- data
    def history(self) -> MaskHistory | None:
        """The mask history of the file shown (None before its image is read)."""
        res = self.subject()
        return None if res is None else self.histories.get(str(res.path))

    def shows_current(self) -> bool:
        """Whether the image shown is the current subject's (not the last file's while
        the next one loads)."""
        res = self.subject()
        return res is not None and self.data is not None and self.data["path"] == str(res.path)

    def refresh(self) -> None:
        self._file_labels()
        if self.raw_current is not None:
            if self.data is not None and self.data["path"] != self.raw_current.path:
                self._file_leaving(self.raw_current)
            self._refresh_raw()
            return
        res = self.current_result()
        if res is None:
            return
        if not self.shows_current():
            self._file_leaving(res)
        self.submit("image", prepare_saxs2d, str(res.path), "log", on_result=self._on_image,
                    description=f"Detector {res.label}")

    def _file_leaving(self, res) -> None:
        # nothing of the last file may pass for the next one's (issue 22)
        loading = f"Loading {res.label}\u2026"
        self.mask_tools.set_history_state(False, False, loading)
        self.editor.summary.setText(loading)
        self.readout.setText(" ")
        self.preview = None
        self.preview_item.clear()
        self.mask_item.clear()

    def _on_image(self, data: dict) -> None:
        res = self.subject()
        if res is None or str(res.path) != data["path"]:
            return
        self.data = data
        img = data["image"]
        self.image_item.setImage(data["pixels"], autoLevels=False, levels=None)
        key = self._geometry_key(res)
        if key != self._frame:  # the same geometry keeps the user's zoom
            frame_image(self.view, self.image_item, box=data_box(res.qmap))
            self._frame = key
        if res.qmap is None:  # a raw source without a q-map: no beam centre
            self.center_item.clear()
        else:
            cx, cy = res.qmap.beam_center_x + 0.5, res.qmap.beam_center_y + 0.5
            arm = max(3.0, 0.03 * max(img.shape))
            self.center_item.setData(np.array([cx - arm, cx + arm, cx, cx]),
                                     np.array([cy, cy, cy - arm, cy + arm]))
        key = str(res.path)
        first = key not in self.histories
        if first:
            self._new_history(res)
            self._on_from_file(schedule=False)
        shared = self.context.shared.get(MASK_KEY)
        self._mask_changed(publish=first or shared is None or shared.path != key)
        self.schedule_partition()
        self.sigUpdated.emit()

    def clear_plots(self) -> None:
        self.data = None
        for it in (self.image_item, self.preview_item, self.mask_item):
            it.clear()
        self.center_item.clear()

    # ----------------------------------------------------------------- mask
    def _geometry_key(self, res) -> tuple:
        if isinstance(res, RawSubject):
            return self._raw_geometry_key(res)
        return frame_key(res.qmap)

    def _new_history(self, res) -> MaskHistory:
        """A history for a result or a raw source, from its q-map's mask (a raw source
        without a q-map: every pixel valid)."""
        key = str(res.path)
        qm = res.qmap
        self._geometry_of[key] = self._geometry_key(res)
        mask = np.ones(res.shape, bool) if qm is None else np.asarray(qm.mask, bool)
        h = self.histories[key] = MaskHistory(mask)
        return h

    def _mask_changed(self, publish: bool = True) -> None:
        h = self.history()
        if h is None:
            return
        if self.shows_current():
            self.mask_item.setImage(mask_overlay(h.initial, h.current), levels=(0, 2))
        self._update_history_state()
        if publish:
            res = self.subject()
            m = h.current
            m.setflags(write=False)  # shared with the G2 tab: replaced, never changed
            self.context.set_shared(MASK_KEY, DetectorMask(str(res.path), m, h.n_masked))
            self.schedule_partition()
            if not isinstance(res, RawSubject):  # raw sources' masks: this session only
                self._keep_mask(str(res.path))

    # ------------------------------------------------- masks across sessions
    def _keep_mask(self, key: str) -> None:
        """Write the mask drawn on ``key`` to the config folder (worker), or remove the
        file when nothing is drawn: a restart must not lose it (issue 22)."""
        h = self.histories.get(key)
        if h is None or self.kept.get(key) == h.version:
            return
        if h.n_masked == 0 and key not in self.kept:
            self.kept[key] = h.version  # never drawn on: nothing on disk
            return
        version = h.version
        dest = str(session_mod.drawn_mask_path(key))
        self.submit(f"keep:{Path(dest).stem}", keep_mask_job, dest,
                    h.current if h.n_masked else None, key,
                    on_result=lambda _d: self.kept.__setitem__(key, version),
                    description="Detector: keeping the drawn mask")

    def set_results(self, results: list[Any]) -> None:
        super().set_results(results)
        for res in self.results:
            if str(res.path) in self.to_restore:
                self._restore_mask(res)

    def _restore_mask(self, res) -> None:
        key = str(res.path)
        h = self.histories.get(key)
        if h is not None and h.version > 0:  # drawn on since: that mask wins
            self.to_restore.pop(key)
            return
        entry = self.to_restore[key]
        if frame_key(res.qmap) != entry["geometry"]:
            self.to_restore.pop(key)
            self.submit(f"keep:{Path(entry['mask']).stem}", keep_mask_job, entry["mask"],
                        None, key, description="Detector: dropping a stale mask")
            self.context.show_status(f"Detector: the mask drawn on {res.label} was not "
                                     "restored: the file's geometry changed")
            return
        self.submit(f"restore:{Path(entry['mask']).stem}", read_kept_mask_job,
                    entry["mask"], tuple(res.qmap.shape),
                    on_result=lambda m: self._on_mask_restored(res, m),
                    on_error=lambda info: self._on_restore_failed(res, info),
                    description=f"Detector: restoring the mask of {res.label}")

    def _on_mask_restored(self, res, mask: np.ndarray) -> None:
        key = str(res.path)
        if self.to_restore.pop(key, None) is None:
            return
        h = self.histories.get(key)
        if h is None:
            h = self._new_history(res)
        elif h.version > 0:
            return
        if not h.set(mask):
            return
        self.kept[key] = h.version
        self.context.show_status(f"Detector: restored the mask drawn on {res.label} "
                                 f"({h.n_masked:,} pixels; Undo gives back the file's own)")
        cur = self.current_result()
        if cur is not None and str(cur.path) == key:
            self._mask_changed()

    def _on_restore_failed(self, res, info) -> None:
        self.to_restore.pop(str(res.path), None)
        self.context.report_error(f"Detector: the mask drawn on {res.label} could not be "
                                  f"restored: {getattr(info, 'message', info)}")

    def _mask_entries(self) -> dict[str, dict]:
        entries = dict(self.to_restore)
        raw = self.raw_keys()
        for key, h in self.histories.items():
            if key in raw:
                continue
            if h.n_masked:
                shape, bcx, bcy = self._geometry_of[key]
                entries[key] = {"file": key, "mask": str(session_mod.drawn_mask_path(key)),
                                "shape": list(shape), "beam_centre": [bcx, bcy],
                                "n_masked": h.n_masked}
            else:
                entries.pop(key, None)
        return entries

    def persist(self) -> None:
        """Write the drawn masks a worker has not written yet, remove stale ones (at
        close, workers stopped: masks are small, the window is going)."""
        raw = self.raw_keys()
        for key, h in self.histories.items():
            if key not in raw and self.kept.get(key) != h.version:
                keep_mask_job(str(session_mod.drawn_mask_path(key)),
                              h.current if h.n_masked else None, key)
                self.kept[key] = h.version
        wanted = {Path(e["mask"]).name for e in self._mask_entries().values()}
        folder = session_mod.config_dir() / "masks"
        if folder.is_dir():
            for f in folder.glob("*.hdf"):
                if f.name not in wanted:
                    f.unlink(missing_ok=True)

    def _update_history_state(self) -> None:
        h = self.history()
        if h is None:
            self.mask_tools.set_history_state(False, False, "No image yet")
            return
        n = h.n_masked
        total = int(h.initial.sum())
        self.mask_tools.set_history_state(
            h.can_undo, h.can_redo,
            f"{n:,} of {total:,} valid pixels masked ({100.0 * n / max(total, 1):.2f} %)")

    def _submit_step(self, what: str, **kw) -> int | None:
        h = self.history()
        if h is None or not self.shows_current():
            self.context.show_status("Detector: no image yet")
            return None
        return self.submit("mask", mask_step_job, h.current, h.initial, h.version, what,
                           on_result=self._on_step, description=f"Detector: {what}", **kw)

    def _on_apply_shapes(self, masks: list, erase: list) -> None:
        if masks:
            self._submit_step("mask shapes", shapes=masks)
        if erase:
            # after the masks (same job key would cancel them): chained on their result
            self._pending_erase = erase
            if not masks:
                self._apply_pending_erase()

    def _apply_pending_erase(self) -> None:
        erase, self._pending_erase = self._pending_erase, None
        if erase:
            self._submit_step("eraser", shapes=erase, include=True)

    def _on_threshold(self, low, high) -> None:
        if self.data is None:
            return
        self._submit_step("threshold", image=self.data["raw"], low=low, high=high)

    def _on_step(self, step: MaskStep) -> None:
        h = self.history()
        if h is None:
            return
        if not h.commit(step.mask, step.packed_previous, step.version):
            self.context.show_status("Detector: the mask changed meanwhile; apply again")
            return
        self.context.show_status(f"Detector: {step.what}: {step.changed:,} pixels changed")
        self._mask_changed()
        self._apply_pending_erase()

    def _history_action(self, what: str) -> None:
        h = self.history()
        if h is not None and getattr(h, what)():
            self._mask_changed()

    def load_mask(self, path: str) -> int | None:
        """Replace the mask by a mask file's (worker; undoable)."""
        h = self.history()
        if h is None:
            return None
        return self.submit("mask", _load_mask_job, path, h.shape, h.current, h.version,
                           on_result=self._on_step, description=f"Loading {Path(path).name}")

    def save_mask(self, path: str, overwrite: bool = False) -> int | None:
        """Write the mask (HDF5 ``/qmap/mask`` and ``/mask``, 1 = valid) in a worker."""
        h, res = self.history(), self.subject()
        if h is None:
            return None
        return self.submit("save-mask", save_mask_job, path, h.current, [str(res.path)],
                           overwrite, str(res.path), on_result=self._on_exported,
                           description=f"Saving {Path(path).name}")

    def _on_load_mask(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load mask", "",
                                              "Masks (*.hdf *.h5 *.hdf5 *.npy *.tif *.tiff)")
        if path:
            self.load_mask(path)

    def _on_save_mask(self) -> None:
        # the dialog asks before replacing a file
        path = ask_save_path(self, self.context, "Save mask", "mask.hdf", "HDF5 (*.hdf *.h5)")
        if path:
            self.save_mask(path, overwrite=True)

    # ------------------------------------------------------------ partition
    def _geometry(self) -> dict | None:
        res = self.subject()
        if res is None or res.qmap is None:
            return None
        qm = res.qmap
        return {"energy_kev": qm.energy_kev, "det_dist_m": qm.detector_distance,
                "pixel_size_m": qm.pixel_size, "bcx": qm.beam_center_x,
                "bcy": qm.beam_center_y}

    def schedule_partition(self) -> None:
        """Re-partition after a short pause (settings or mask changed)."""
        self._partition_timer.start()

    def run_partition(self) -> int | None:
        """Partition the detector with the current settings and mask in a worker."""
        h, geo = self.history(), self._geometry()
        if h is None or geo is None:
            return None
        if geo["energy_kev"] is None:
            self.context.report_error("Detector: the file states no X-ray energy")
            return None
        path = str(self.subject().path)
        return self.submit("partition", partition_job, h.shape, geo, h.current,
                           self.editor.settings(),
                           on_result=lambda prev: self._on_partition(prev, path),
                           description="Detector: partition")

    def _on_partition(self, prev: PartitionPreview, path: str | None = None) -> None:
        res = self.subject()
        if path is not None and (res is None or str(res.path) != path):
            return  # the last file's partition
        self.preview = prev
        self.editor.show_counts(prev.counts_dynamic, prev.qmap)
        self._show_preview()
        self.sigUpdated.emit()

    def _show_preview(self) -> None:
        which = self.editor.show_combo.currentData()
        # the bins cover the image: shown while the partition editor is open
        if self.preview is None or which == "none" or self.tabs.currentWidget() is not self.editor:
            self.preview_item.clear()
            return
        rgba = self.preview.rgba_dynamic if which == "dynamic" else self.preview.rgba_static
        self.preview_item.setImage(rgba, levels=(0, 255))

    def _on_from_file(self, schedule: bool = True) -> None:
        res = self.subject()
        if res is None or res.qmap is None:
            return
        self.editor.set_from_counts(res.qmap.dynamic_num_pts, res.qmap.static_num_pts)
        if schedule:
            self.schedule_partition()

    def use_partition(self) -> None:
        """Offer the previewed partition (with the mask in it) to the G2 tab."""
        res = self.subject()
        if self.preview is None or res is None:
            self.context.show_status("Detector: no partition yet")
            return
        self.context.set_shared(PARTITION_KEY, DrawnPartition(
            str(res.path), self.preview.qmap, dict(self.preview.settings)))
        self.context.show_status(
            f"Detector: partition of {self.preview.qmap.n_dynamic} bins ready for regrouping")

    def save_qmap(self, path: str, overwrite: bool = False) -> int | None:
        """Write the previewed partition as a q-map file in a worker."""
        res = self.subject()
        if self.preview is None or res is None:
            self.context.report_error("Detector: no partition to save yet")
            return None
        return self.submit("save-qmap", save_qmap_job, path, self.preview.qmap,
                           [str(res.path)], overwrite, str(res.path),
                           on_result=self._on_exported, description=f"Saving {Path(path).name}")

    def _on_save_qmap(self) -> None:
        path = ask_save_path(self, self.context, "Save q-map", "qmap.hdf", "HDF5 (*.hdf *.h5)")
        if path:
            self.save_qmap(path, overwrite=True)

    # ---------------------------------------------------------------- hover
    def _on_mouse_moved(self, evt) -> None:
        res = self.subject()
        if not self.shows_current():
            return
        p = self.view.mapSceneToView(evt[0])
        if res.qmap is None:  # a raw source without a q-map: pixel and counts only
            row, col, text = self._plain_pixel(p.y(), p.x())
        else:
            info = pixel_info(res.qmap, p.y(), p.x())
            row, col = info.row, info.col
            text = info.text(float(self.data["raw"][row, col])) if info.inside else None
        if text is None:
            self.readout.setText(" ")
            return
        h = self.history()
        if h is not None and not h.current[row, col]:
            text += "  [masked]"
        self.readout.setText(text)

    # ------------------------------------------------------------- settings
    def get_settings(self) -> dict:
        return {"partition": self.editor.settings(),
                "show": self.editor.show_combo.currentData(),
                "drawn_masks": list(self._mask_entries().values())}

    def set_settings(self, s: dict) -> None:
        masks = s.get("drawn_masks")
        for e in masks if isinstance(masks, list) else []:
            try:
                key = str(e["file"])
                shape = tuple(int(n) for n in e["shape"])
                bcx, bcy = (float(v) for v in e["beam_centre"])
            except (KeyError, TypeError, ValueError):
                continue
            mask = session_mod.drawn_mask_path(key)  # never a path from the file
            if len(shape) == 2 and mask.is_file():
                self.to_restore[key] = {"file": key, "mask": str(mask), "shape": list(shape),
                                        "beam_centre": [bcx, bcy],
                                        # as frame_key of its file must give
                                        "geometry": (shape, round(bcx, 3), round(bcy, 3)),
                                        "n_masked": e.get("n_masked")}
        show = s.get("show")
        i = self.editor.show_combo.findData(show)
        if i >= 0:
            self.editor.show_combo.setCurrentIndex(i)
