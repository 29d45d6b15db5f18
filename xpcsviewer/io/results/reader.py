"""Reader of XPCS result files (APS-8IDI NeXus layout and the legacy ``/exchange`` layout).

Every function opens the file read-only and without the HDF5 lock, reads what it
needs and closes it again (no handle pool: a correlator may still be writing the
folder). Small data go into :class:`~xpcsviewer.model.result.XpcsResult`; big data
(the 2-D image, two-time maps, the per-pixel G2 stack) have their own lazy
functions. Bad input raises :class:`~xpcsviewer.io.errors.XpcsFileError` naming
the file, the dataset and what was expected; a file still being written raises
:class:`~xpcsviewer.io.errors.FileBeingWrittenError`; NaN/Inf values are
reported in ``XpcsResult.warnings``.

The work is split by seam: ``_h5`` (opening, size checks, bounded reads),
``_schema`` (paths, layout), ``_qmap_read``, ``_analysis`` (g2, two-time,
metadata) and ``_bigdata`` (lazy big datasets); this module assembles a result
and scans folders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xpcsviewer.io._h5 import (
    _array,
    _check_finite,
    _exists,
    _number,
    _scalar,
    not_closed_note,
)
from xpcsviewer.io._h5 import open_h5 as _open
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results._analysis import (
    G2_MAX,
    SPIKE_FLOOR,
    SPIKE_K,
    _g2_valid,  # noqa: F401 - re-exported for the tests
    _metadata,
    _read_multitau,
    _read_twotime,
    _sample,
    g2_outliers,
)
from xpcsviewer.io.results._bigdata import C2View, read_c2, read_g2_stack_delay, read_saxs_2d
from xpcsviewer.io.results._qmap_read import (
    _dynamic_labels,
    _read_qmap_legacy,
    _read_qmap_nexus,
)
from xpcsviewer.io.results._schema import (
    COUNT_TIME,
    FRAME_TIME,
    QMAP,
    RESULT_SUFFIXES,
    _analysis_type,
    _layout,
)
from xpcsviewer.io.results.age_lag import (  # the multi-tau two-time map (issue 35)
    read_age_lag,
    read_age_lag_info,
)
from xpcsviewer.model.result import QMap, XpcsResult

#: Time segments of the SAXS 1-D stability data (a handful in practice).
MAX_SEGMENTS = 10_000

__all__ = [
    "G2_MAX",
    "RESULT_SUFFIXES",
    "SPIKE_FLOOR",
    "SPIKE_K",
    "C2View",
    "FileSummary",
    "g2_outliers",
    "get_analysis_type",
    "read_age_lag",
    "read_c2",
    "read_g2_stack_delay",
    "read_qmap",
    "read_result",
    "read_saxs_2d",
    "scan_folder",
]


def get_analysis_type(path: str | Path) -> tuple[str, ...]:
    """Analysis types of a result file, a subset of ``("Twotime", "Multitau")`` in that order.

    Raises
    ------
    XpcsFileError
        If the file is unreadable, of unknown layout or holds no results.
    """
    with _open(path) as f:
        return _analysis_type(f, _layout(f))


def read_result(path: str | Path) -> XpcsResult:
    """Read everything of a result file except its big arrays.

    Parameters
    ----------
    path : str or Path
        A NeXus (``/xpcs/...``, ``/entry/...``) or legacy (``/exchange``) result file.

    Returns
    -------
    XpcsResult
        g2 as (T, Nd) float64 with ``valid`` False at missing points (g2 == 0 with
        err == 0, or non-finite); delays in seconds (delay_list x frame_time x
        stride x avg); q-map geometry and energy from ``/xpcs/qmap``
        (disagreements with ``/entry`` metadata are warnings); metadata flattened
        to ``"group/key (units)" -> value``; ``/entry/sample`` in ``sample``.

    Raises
    ------
    XpcsFileError
        Not HDF5, truncated, empty, unknown layout, missing required dataset,
        wrong shape/dtype, or an inconsistent q-map.
    """
    p = Path(path)
    warnings: list[str] = []
    with _open(p) as f:
        note = not_closed_note(f)
        if note:
            warnings.append(note)
        layout = _layout(f)
        atype = _analysis_type(f, layout)
        if layout == "nexus":
            qm = _read_qmap_nexus(f, QMAP, warnings)
            frame_time = _number(f, FRAME_TIME, positive=True)
            count_time = _number(f, COUNT_TIME, required=False)
            start = _scalar(f, "/entry/start_time", required=False)
            p1d, pseg, pint = (
                "/xpcs/temporal_mean/scattering_1d",
                "/xpcs/temporal_mean/scattering_1d_segments",
                "/xpcs/spatial_mean/intensity_vs_time",
            )
        else:
            qm = _read_qmap_legacy(f, warnings)
            frame_time = _number(
                f, "/measurement/instrument/detector/exposure_period", positive=True
            )
            count_time = _number(
                f, "/measurement/instrument/detector/exposure_time", required=False
            )
            start = _scalar(
                f, "/measurement/instrument/source_begin/datetime", required=False
            )
            p1d, pseg, pint = (
                "/exchange/partition-mean-total",
                "/exchange/partition-mean-partial",
                "/exchange/frameSum",
            )
        ns = qm.n_static
        if _exists(f, p1d):
            saxs_1d = _array(
                f,
                p1d,
                kinds="iuf",
                ndim=(1, 2),
                expected=f"(1, Ns) = (1, {ns})",
                max_elements=max(1, ns),
            )
            if saxs_1d.size != ns:
                raise XpcsFileError(
                    f.filename,
                    f"has shape {saxs_1d.shape}",
                    dataset=p1d,
                    expected=f"(1, Ns) = (1, {ns}) with Ns = len(static_index_mapping)",
                )
            saxs_1d = saxs_1d.ravel().astype(np.float64)
        else:
            warnings.append(f"{p1d} missing")
            saxs_1d = np.full(ns, np.nan)
        segs = None
        if _exists(f, pseg):
            segs = _array(
                f,
                pseg,
                kinds="iuf",
                ndim=(1, 2),
                expected=f"(S, Ns) with Ns = {ns}",
                max_elements=max(1, ns) * MAX_SEGMENTS,
            )
            segs = segs.reshape(1, -1) if segs.ndim == 1 else segs
            if segs.shape[1] != ns:
                raise XpcsFileError(
                    f.filename,
                    f"has shape {segs.shape}",
                    dataset=pseg,
                    expected=f"(S, Ns) with Ns = {ns}",
                )
            segs = segs.astype(np.float64)
        int_t = None
        if _exists(f, pint):
            int_t = _array(
                f,
                pint,
                kinds="iuf",
                ndim=2,
                expected="(2, N): frame index, mean intensity",
                shape=(2, None),
                dtype=np.float64,
            )
        _check_finite(warnings, p1d, saxs_1d)
        mt = (
            _read_multitau(f, layout, frame_time, qm.n_dynamic, warnings)
            if "Multitau" in atype
            else None
        )
        tt = (
            _read_twotime(f, layout, frame_time, qm, warnings)
            if "Twotime" in atype
            else None
        )
        metadata = _metadata(f, layout)
        sample, sample_units = _sample(f)
        try:  # the multi-tau two-time map's extent (its entries are read lazily)
            age_lag = read_age_lag_info(f)
        except XpcsFileError as exc:
            age_lag = None
            warnings.append(f"age x lag map not readable: {exc}")
    res = XpcsResult(
        path=p,
        analysis_type=atype,
        layout=layout,
        qmap=qm,
        frame_time=float(frame_time),
        count_time=count_time,
        start_time=None if start is None else str(start),
        saxs_1d=saxs_1d,
        saxs_1d_segments=segs,
        intensity_vs_time=int_t,
        multitau=mt,
        twotime=tt,
        age_lag=age_lag,
        metadata=metadata,
        sample=sample,
        warnings=warnings,
    )
    res.sample_units = sample_units
    return res


def read_qmap(path: str | Path) -> QMap:
    """The partition of a partition file (``/qmap``) or of a result file (``/xpcs/qmap``).

    Raises
    ------
    XpcsFileError
        Unreadable file, no partition group, or an inconsistent partition.
    """
    with _open(path) as f:
        for base in ("/qmap", QMAP):
            if _exists(f, base):
                return _read_qmap_nexus(f, base, [])
        if _exists(f, "/xpcs/dqmap"):
            return _read_qmap_legacy(f, [])
        raise XpcsFileError(
            f.filename,
            "no partition found",
            dataset="/qmap",
            expected="a /qmap (partition file) or /xpcs/qmap (result file) group",
        )


# --------------------------------------------------------------------------- folders
@dataclass
class FileSummary:
    """What a folder scan learns about one file from its small datasets only."""

    path: Path
    analysis_type: tuple[str, ...] = ()
    n_dynamic: int = 0
    labels: list[str] = field(default_factory=list)
    mtime: float = 0.0
    size_bytes: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the file could be read."""
        return self.error is None


def _summary(p: Path) -> FileSummary:
    st = p.stat()
    s = FileSummary(path=p, mtime=st.st_mtime, size_bytes=st.st_size)
    try:
        with _open(p) as f:
            layout = _layout(f)
            s.analysis_type = _analysis_type(f, layout)
            if layout == "nexus":
                s.labels = _dynamic_labels(f, QMAP)
                s.n_dynamic = len(s.labels)
            else:
                res = read_result(p)  # legacy files are rare: the full reader is fine
                s.n_dynamic = res.qmap.n_dynamic
                s.labels = res.qmap.dynamic_labels()
    except XpcsFileError as exc:
        s.error = exc.one_line()
    except (OSError, ValueError, IndexError) as exc:
        s.error = f"{p}: {exc}"
    return s


def scan_folder(folder: str | Path) -> list[FileSummary]:
    """Summaries of every result file in ``folder`` (not recursive), sorted by name.

    Reads only small datasets (analysis-type paths, dynamic bin lists); an
    unreadable file gets a summary with ``error`` set instead of raising.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(str(folder))
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and p.suffix.lower() in RESULT_SUFFIXES
        and not p.name.startswith(".")
    )
    return [_summary(p) for p in files]
