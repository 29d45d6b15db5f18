"""The big datasets, read lazily and in bounded pieces: the 2-D image, two-time maps
(decimated by strided hyperslabs) and one delay of the per-pixel G2 stack."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import (
    MAX_PIXELS,
    _array,
    _dataset,
    _exists,
    _number,
    _read_error,
    check_declared,
)
from xpcsviewer.io._h5 import open_h5 as _open
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results._analysis import _c2_names, _config, _frame_counts, _legacy_counts
from xpcsviewer.io.results._qmap_read import _dynamic_labels
from xpcsviewer.io.results._schema import (
    C2_GROUP,
    FRAME_TIME,
    G2_STACK_NAMES,
    MT,
    QMAP,
    TT,
    _analysis_type,
    _layout,
)
from xpcsviewer.progress import check_interrupted


def read_saxs_2d(path: str | Path) -> np.ndarray:
    """The time-averaged detector image (H, W) float64 (mean counts per pixel per frame)."""
    with _open(path) as f:
        layout = _layout(f)
        p = (
            "/xpcs/temporal_mean/scattering_2d"
            if layout == "nexus"
            else "/exchange/pixelSum"
        )
        mask_p = f"{QMAP}/mask" if layout == "nexus" else "/xpcs/mask"
        det = None
        if _exists(f, mask_p):
            m = _dataset(f, mask_p, "a (H, W) mask")
            check_declared(
                m, expected="a (H, W) mask of a detector", max_elements=MAX_PIXELS
            )
            det = tuple(m.shape) if m.ndim == 2 else None
        return _array(
            f,
            p,
            kinds="iuf",
            ndim=2,
            expected="(1, H, W) or (H, W)"
            if det is None
            else f"the detector shape {det}",
            squeeze_leading=True,
            shape=det,
            max_elements=MAX_PIXELS,
            dtype=np.float64,
        )


@dataclass
class C2View:
    """A (possibly decimated) two-time map ready for display.

    Attributes
    ----------
    c2 : (M, M) float64
        Full symmetric C(t1, t2) built from the stored upper triangle (the
        diagonal appears once: the viewer's ``half + half.T`` with the diagonal halved).
    stride : int
        Decimation: view pixel i is frame ``i * stride``.
    t0 : float
        Seconds per view pixel: frame_time x stride_frame x avg_frame of the
        two-time analysis, times ``stride``.
    dq_bin : int
        1-based dynamic bin value (g2 column ``dq_bin - 1``).
    label : str
        The bin's label, e.g. ``"q=0.00512 Å⁻¹"``.
    n_frames : int
        N, the size of the stored map.
    """

    c2: np.ndarray
    stride: int
    t0: float
    dq_bin: int
    label: str
    n_frames: int = 0
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _bin_label(f: h5py.File, layout: str, dq_bin: int) -> str:
    if layout != "nexus":
        return f"qbin={dq_bin}"
    labels = _dynamic_labels(f, QMAP)
    if not 1 <= dq_bin <= len(labels):
        raise XpcsFileError(
            f.filename,
            f"bin {dq_bin} is not in the q-map",
            dataset=f"{QMAP}/dynamic_index_mapping",
            expected=f"bins 1..{len(labels)}",
        )
    return labels[dq_bin - 1]


def _correct_diagonal(c: np.ndarray) -> None:
    """Replace each diagonal value by the mean of its off-diagonal neighbours (in place)."""
    m = c.shape[0]
    if m < 2:
        return
    up = np.diagonal(c, 1)  # C[i, i+1]
    diag = np.empty(m)
    diag[0] = up[0]
    diag[-1] = up[-1]
    diag[1:-1] = 0.5 * (up[1:] + up[:-1])  # C[i, i+1] and C[i-1, i]
    np.fill_diagonal(c, diag)


def read_c2(
    path: str | Path, index: int, max_size: int = 1024, correct_diagonal: bool = False
) -> C2View:
    """Read one two-time map, decimated by strided hyperslabs to at most ``max_size`` pixels.

    Only the strided rows and columns are read (in row blocks), into one
    preallocated (M, M) float64 array that is then mirrored in place: memory is
    bounded by the view, never by N x N, and the map is never held twice.

    Parameters
    ----------
    path : str or Path
    index : int
        0-based position in processed order (``XpcsResult.twotime.map_names``).
    max_size : int
        Largest view size M; stride = ceil(N / max_size).
    correct_diagonal : bool
        Replace the diagonal (shot-noise spike at t1 = t2) by its neighbours' mean.
    """
    if max_size < 1:
        raise ValueError("max_size must be >= 1")
    with _open(path) as f:
        layout = _layout(f)
        if "Twotime" not in _analysis_type(f, layout):
            raise XpcsFileError(
                f.filename,
                "no two-time result",
                dataset=C2_GROUP,
                expected="a two-time result file",
            )
        group, names = _c2_names(f, layout)
        if not 0 <= index < len(names):
            raise IndexError(
                f"two-time map index {index} out of range 0..{len(names) - 1}"
            )
        ds = _dataset(f, f"{group}/{names[index]}", "a square (N, N) float map")
        # C is a normalised mean near 1: integers are not one (a map scaled x1000 and
        # stored as int would give g2 by age and the view 1000 times off; issue 50)
        if ds.ndim != 2 or ds.shape[0] != ds.shape[1] or ds.dtype.kind != "f":
            raise XpcsFileError(
                f.filename,
                f"has shape {ds.shape} and dtype {ds.dtype}",
                dataset=ds.name,
                expected="a square (N, N) float map",
            )
        # Decimated reads are bounded by the view; only the written data is checked.
        check_declared(
            ds, expected="a square (N, N) float map", max_elements=sys.maxsize
        )
        n = int(ds.shape[0])
        stride = max(1, -(-n // int(max_size)))
        m = -(-n // stride)
        c = np.empty((m, m), dtype=np.float64)
        # Small row blocks (~64 k elements): HDF5 builds per-element offset lists for
        # strided selections, so a whole-view read would cost several times the view.
        block = max(1, 65536 // max(m, 1))
        if ds.chunks is not None and ds.compression is not None:
            # Tall compressed chunks (the standard correlator writes one N x N chunk)
            # are decompressed once per read call: read a whole band of chunk rows
            # at a time so that no chunk is decompressed twice.
            block = max(block, -(-int(ds.chunks[0]) // stride))
        try:
            for r0 in range(0, m, block):
                check_interrupted()
                r1 = min(m, r0 + block)
                c[r0:r1] = ds[r0 * stride : (r1 - 1) * stride + 1 : stride, ::stride]
        except (OSError, RuntimeError, ValueError, TypeError) as exc:
            raise _read_error(ds, exc) from None
        frame_time = _number(
            f,
            FRAME_TIME
            if layout == "nexus"
            else "/measurement/instrument/detector/exposure_period",
            positive=True,
        )
        if layout == "nexus":
            stride_f, avg_f = _frame_counts(
                f, f"{TT}/config", _config(f, f"{TT}/config")
            )
            bins = (
                _array(
                    f,
                    f"{TT}/processed_bins",
                    kinds="iuf",
                    expected=f"({len(names)},) bin values",
                    max_elements=len(names),
                )
                .ravel()
                .astype(np.int64)
                if _exists(f, f"{TT}/processed_bins")
                else np.array([int(x.split("_")[-1]) for x in names])
            )
        else:
            stride_f, avg_f = _legacy_counts(f)
            bins = np.array([int(x.split("_")[-1]) for x in names])
        t_step = frame_time * stride_f * avg_f
        if index >= bins.size:
            raise XpcsFileError(
                f.filename,
                f"{bins.size} processed bins for {len(names)} c2 maps",
                dataset=f"{TT}/processed_bins",
                expected="one bin per c2 map",
            )
        dq_bin = int(bins[index])
        label = _bin_label(f, layout, dq_bin)
    # Mirror the upper triangle (diagonal included) onto the lower one, row by row
    # so that no temporary as large as the map is made.
    for i in range(1, m):
        c[i, :i] = c[:i, i]
    if correct_diagonal:
        _correct_diagonal(c)
    return C2View(
        c2=c,
        stride=stride,
        t0=t_step * stride,
        dq_bin=dq_bin,
        label=label,
        n_frames=n,
        index=index,
    )


def read_g2_stack_delay(
    path: str | Path, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-pixel G2, IP and IF (each (H, W) float64) at delay index ``k`` only.

    Accepts ``/xpcs/multitau/unnormalized_G2`` and ``unnormalized_g2`` (either may
    be an ExternalLink to a side file, resolved next to the result file) and the
    legacy ``/exchange/G2IPIF`` or ``/exchange/{G2, IP, IF}``.
    """
    p = Path(path)
    with _open(p) as f:
        layout = _layout(f)
        cands = (
            [f"{MT}/{n}" for n in G2_STACK_NAMES]
            if layout == "nexus"
            else ["/exchange/G2IPIF"]
        )
        for c in cands:
            try:
                link = f.get(c, getlink=True)
            except (KeyError, RuntimeError, OSError):
                link = None
            if link is None:
                continue
            if isinstance(link, h5py.ExternalLink):
                side = (
                    (p.parent / link.filename)
                    if not os.path.isabs(link.filename)
                    else Path(link.filename)
                )
                if not side.is_file():
                    raise XpcsFileError(
                        p,
                        f"external link to missing file {link.filename}",
                        dataset=c,
                        expected="the G2 side file next to the result",
                    )
                with _open(side) as fs:
                    return _g2_slice(fs, link.path, k)
            return _g2_slice(f, c, k)
        if layout == "legacy" and all(
            _exists(f, f"/exchange/{n}") for n in ("G2", "IP", "IF")
        ):
            out = []
            for n in ("G2", "IP", "IF"):
                ds = _dataset(f, f"/exchange/{n}", "(T, H, W)")
                _check_delay(ds, k)
                out.append(_read_slice(ds, k))
            return out[0], out[1], out[2]
        raise XpcsFileError(
            p,
            "no per-pixel G2 stack",
            dataset=cands[0],
            expected="the G2/IP/IF stack (T, 3, H, W)",
        )


def _g2_slice(
    f: h5py.File, path: str, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ds = _dataset(f, path, "(T, 3, H, W): G2, IP, IF per delay")
    if ds.dtype.kind != "f":  # sums of photon products: an integer stack was not ours
        raise XpcsFileError(f.filename, f"holds {ds.dtype} values", dataset=path,
                            expected="floating-point G2, IP, IF (float32 or float64)")
    if ds.ndim != 4 or ds.shape[1] != 3 or ds.shape[2] * ds.shape[3] > MAX_PIXELS:
        raise XpcsFileError(
            f.filename,
            f"has shape {ds.shape}",
            dataset=path,
            expected="(T, 3, H, W): G2, IP, IF per delay",
        )
    _check_delay(ds, k)
    a = _read_slice(ds, k)
    return a[0], a[1], a[2]


class StackTooShortError(XpcsFileError, IndexError):
    """A G2 stack with fewer delays than asked for (bad data, and an index error)."""


def _check_delay(ds: h5py.Dataset, k: int) -> None:
    if k < 0:
        raise IndexError(f"delay index {k} is negative")
    if k >= ds.shape[0]:
        # The stack must have one entry per delay of the delay list.
        raise StackTooShortError(
            ds.file.filename,
            f"holds {ds.shape[0]} delays, fewer than the delay list (delay index {k} "
            "is missing)",
            dataset=ds.name,
            expected="one G2/IP/IF image per delay",
        )


def _read_slice(ds: h5py.Dataset, k: int) -> np.ndarray:
    try:
        return np.asarray(ds[k], dtype=np.float64)
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None
