"""Writers for result files (APS-8IDI NeXus layout) and partition (/qmap) files.

Everything is written atomically (:func:`xpcsviewer.io.outputs.atomic_path`: a
temporary file in the target folder, fsynced, then renamed), so a reader (or a crash)
never sees a half-written file. The layout follows result-file-format.md §12 so that
the existing viewers open our files: float results as float32, 1-D arrays stay 1-D,
arrays over 8192 elements lzf-compressed (gzip when lzf is unavailable), c2 maps as
upper triangles.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io.errors import display_path
from xpcsviewer.io.outputs import atomic_path, check_h5_output, open_h5_output
from xpcsviewer.io.results.age_lag import write_age_lag_group
from xpcsviewer.io.results.age_lag_groups import write_age_lag_groups_group
from xpcsviewer.io.results.g2stack import (
    G2StackWriter,
    g2_side_path,
    link_g2_stack,
    open_g2_stack_writer,
)
from xpcsviewer.io.results.twotime_groups import write_twotime_groups_group
from xpcsviewer.model.result import QMap, XpcsResult

__all__ = ["atomic_h5", "write_qmap_file", "write_qmap_group", "write_result",
           "write_result_with_g2_stack"]

QMAP_VERSION = "xpcsviewer-1"


@contextlib.contextmanager
def atomic_h5(path: str | Path, overwrite: bool = False) -> Iterator[h5py.File]:
    """Open a temporary HDF5 file beside ``path``; rename it onto ``path`` on success.

    Raises ``FileExistsError`` when ``path`` exists and ``overwrite`` is False.
    On any exception the temporary file is removed and ``path`` is untouched; a
    full disk is an ``OSError`` naming ``path`` (HDF5 itself never sees it).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (use overwrite=True)")
    with atomic_path(path) as tmp, open_h5_output(tmp) as f:
        yield f


def _compression() -> dict[str, Any]:
    return (
        {"compression": "lzf"}
        if "lzf" in h5py.filters.decode
        else {"compression": "gzip"}
    )


def _put(
    group: h5py.Group,
    name: str,
    value: Any,
    *,
    keep_dtype: bool = False,
    chunks: tuple[int, ...] | None = None,
) -> h5py.Dataset:
    """Write one dataset the way the standard correlator does (see module docstring)."""
    check_h5_output(group)  # a full disk stops the write here
    if name in group:
        del group[name]
    if isinstance(value, str):
        return group.create_dataset(
            name, data=display_path(value), dtype=h5py.string_dtype()
        )
    arr = np.asarray(value)
    if arr.dtype.kind in "US":
        # display_path: file names may hold bytes that are not UTF-8
        return group.create_dataset(
            name,
            data=np.array(
                [display_path(str(x)) for x in arr.ravel()], dtype=object
            ).reshape(arr.shape),
            dtype=h5py.string_dtype(),
        )
    if arr.dtype.kind == "f" and not keep_dtype:
        arr = arr.astype(np.float32)
    kw: dict[str, Any] = {}
    if arr.size > 8192:
        kw.update(_compression())
        kw["chunks"] = chunks or (
            (*(1,) * (arr.ndim - 2), *arr.shape[-2:]) if arr.ndim >= 2 else arr.shape
        )
    return group.create_dataset(name, data=arr, **kw)


def _c2_chunk_rows(n: int) -> int:
    """Rows per chunk of a c2 map: whole rows, about 128 KB per chunk.

    A decimated view reads every s-th row; with row chunks only those rows are
    decompressed (tiles or one N x N chunk would decompress the whole map).
    """
    return max(1, min(16, n, 32768 // max(n, 1)))


def _put_c2(group: h5py.Group, name: str, c2: np.ndarray) -> h5py.Dataset:
    """Write the upper triangle (diagonal included) of a map as float32, in row blocks.

    Never makes a full-size temporary: memory is the caller's map plus one block.
    """
    n = c2.shape[0]
    if name in group:
        del group[name]
    ds = group.create_dataset(
        name,
        shape=(n, n),
        dtype=np.float32,
        chunks=(_c2_chunk_rows(n), n),
        shuffle=True,
        **_compression(),
    )
    cols = np.arange(n)
    for r0 in range(0, n, 1024):
        r1 = min(n, r0 + 1024)
        blk = np.asarray(c2[r0:r1], dtype=np.float32)
        blk[cols[None, :] < np.arange(r0, r1)[:, None]] = 0.0  # lower triangle is zero
        ds[r0:r1] = blk
        check_h5_output(ds)
    return ds


def _put_dict(group: h5py.Group, values: Mapping[str, Any]) -> None:
    for key, val in values.items():
        if val is None:
            continue
        if isinstance(val, Mapping):
            _put_dict(group.require_group(key), val)
        elif isinstance(val, (bool, np.bool_)):
            _put(group, key, np.bool_(val))
        elif isinstance(val, (int, np.integer)):
            _put(group, key, np.int64(val))
        elif isinstance(val, (float, np.floating)):
            _put(group, key, np.float64(val), keep_dtype=True)
        else:
            _put(group, key, val, keep_dtype=True)


def write_qmap_group(group: h5py.Group, qmap: QMap, source_file: str = "") -> None:
    """Write a partition into ``group`` with the keys of the standard partition tool (§11)."""
    strs = h5py.string_dtype()
    if not qmap.hash:
        qmap.hash = qmap.content_hash()
    _put(group, "beam_center_x", np.float64(qmap.beam_center_x), keep_dtype=True)
    _put(group, "beam_center_y", np.float64(qmap.beam_center_y), keep_dtype=True)
    _put(group, "pixel_size", np.float64(qmap.pixel_size), keep_dtype=True)
    _put(
        group, "detector_distance", np.float64(qmap.detector_distance), keep_dtype=True
    )
    if qmap.energy_kev is not None:
        _put(group, "energy", np.float64(qmap.energy_kev), keep_dtype=True)
    mask = np.asarray(qmap.mask) > 0
    _put(group, "mask", mask.astype(np.uint8))
    _put(group, "blemish", np.ones(mask.shape, np.uint8))
    group.create_dataset("map_names", data=[str(x) for x in qmap.map_names], dtype=strs)
    group.create_dataset("map_units", data=[str(x) for x in qmap.map_units], dtype=strs)
    _put(group, "source_file", source_file)
    for kind in ("dynamic", "static"):
        _put(
            group,
            f"{kind}_num_pts",
            np.asarray(getattr(qmap, f"{kind}_num_pts"), dtype=np.int64),
        )
        _put(group, f"{kind}_roi_map", np.asarray(getattr(qmap, f"{kind}_roi_map")))
        _put(
            group,
            f"{kind}_index_mapping",
            np.asarray(getattr(qmap, f"{kind}_index_mapping")),
        )
        for dim in (0, 1):
            vals = np.asarray(
                getattr(qmap, f"{kind}_v_list_dim{dim}"), dtype=np.float64
            )
            ds = _put(group, f"{kind}_v_list_dim{dim}", vals, keep_dtype=True)
            ds.attrs["unit"] = str(qmap.map_units[dim])
            ds.attrs["name"] = str(qmap.map_names[dim])
            ds.attrs["size"] = np.int64(vals.size)
    group.attrs["hash"] = qmap.hash
    group.attrs["version"] = QMAP_VERSION


def write_qmap_file(
    path: str | Path, qmap: QMap, *, source_file: str = "", overwrite: bool = False
) -> Path:
    """Write a partition file: group ``/qmap`` as the standard partition tool does (§11)."""
    with atomic_h5(path, overwrite=overwrite) as f:
        write_qmap_group(f.create_group("qmap"), qmap, source_file=source_file)
    return Path(path)


def _c2_iter(c2_maps: Any) -> Iterable[np.ndarray]:
    if c2_maps is None:
        return []
    if callable(c2_maps):
        return c2_maps()
    if isinstance(c2_maps, Mapping):
        return (c2_maps[k] for k in sorted(c2_maps))
    return c2_maps


def _g2_from_c2(c2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Diagonal means C[i, i+k] (k >= 0): g2 (N,) and 5 segments (5, N//5).

    Only the upper triangle (diagonal included) is used, so a full symmetric map
    and a stored upper-triangular one give the same result.
    """
    n = c2.shape[0]
    full = np.array([np.diagonal(c2, k).mean(dtype=np.float64) for k in range(n)])
    m = n // 5
    seg = np.zeros((5, m))
    for s in range(5):
        blk = c2[s * m : (s + 1) * m, s * m : (s + 1) * m]
        seg[s] = [np.diagonal(blk, k).mean(dtype=np.float64) for k in range(m)]
    return full, seg


def write_result(
    path: str | Path,
    result: XpcsResult,
    *,
    saxs_2d: np.ndarray | None = None,
    c2_maps: Mapping[Any, np.ndarray]
    | Iterable[np.ndarray]
    | Callable[[], Iterable[np.ndarray]]
    | None = None,
    g2_stack: np.ndarray | None = None,
    g2_stack_file: str | None = None,
    overwrite: bool = False,
    age_lag: Any = None,
    twotime_groups: Any = None,
    age_lag_groups: Any = None,
) -> Path:
    """Write a complete result file in the APS-8IDI NeXus layout (§12), atomically.

    Parameters
    ----------
    path : str or Path
        Output file; its folder is created if needed.
    result : XpcsResult
        What to write. ``result.multitau`` and/or ``result.twotime`` decide the
        analysis type; ``result.sample`` goes to ``/entry/sample`` (values may be
        ``(value, unit)`` tuples, written with a ``units`` attribute);
        ``result.metadata`` entries whose key starts with ``"entry/"`` or
        ``"xpcs/"`` are written at that path (a trailing ``" (units)"`` becomes
        a ``units`` attribute).
    saxs_2d : (H, W) array, optional
        Mean counts per pixel per frame; zeros when omitted.
    c2_maps : mapping, sequence or callable yielding (N, N) arrays, optional
        Full (symmetric) or upper-triangular two-time maps, one per entry of
        ``result.twotime.processed_bins`` in that order. Only the upper triangle
        (diagonal included) is stored. When ``result.twotime.g2_full`` is None,
        g2 from C2 (full and 5 segments) is computed here from the maps.
    g2_stack : (T, 3, H, W) array, optional
        Per-pixel G2, IP, IF written to ``/xpcs/multitau/unnormalized_G2``.
    g2_stack_file : str, optional
        Name of a side file (next to ``path``) holding the stack as ``/G2IPIF``
        (:mod:`xpcsviewer.io.results.g2stack`); ``unnormalized_G2`` becomes an ExternalLink
        to it. Not together with ``g2_stack``.
    overwrite : bool
        Replace an existing file.
    age_lag : AgeLagMap, optional
        The multi-tau two-time map, written to ``/xpcs/twotime/age_lag``
        (:mod:`xpcsviewer.io.results.age_lag`), with or without the full maps.
    twotime_groups : TwotimeGroups, optional
        The two-time maps of pixel groups of the processed bins, written to
        ``/xpcs/twotime/groups`` (:mod:`xpcsviewer.io.results.twotime_groups`); needs
        ``result.twotime``.
    age_lag_groups : AgeLagGroups, optional
        The age x lag maps of pixel groups, written to ``/xpcs/twotime/age_lag_groups``
        (:mod:`xpcsviewer.io.results.age_lag_groups`); needs ``age_lag``.

    Returns
    -------
    Path
    """
    qm = result.qmap
    h, w = qm.shape
    if g2_stack is not None and g2_stack_file is not None:
        raise ValueError("give the G2 stack as an array or as a side file, not both")
    with atomic_h5(path, overwrite=overwrite) as f:
        entry = f.create_group("entry")
        _put(entry, "start_time", result.start_time or "1970-01-01T00:00:00")
        _put(entry, "definition", "NXxpcs")
        det = entry.create_group("instrument/detector_1")
        _put(det, "frame_time", np.float64(result.frame_time), keep_dtype=True)
        _put(
            det,
            "count_time",
            np.float64(
                result.count_time
                if result.count_time is not None
                else result.frame_time
            ),
            keep_dtype=True,
        )
        _put(det, "x_pixel_size", np.float64(qm.pixel_size), keep_dtype=True)
        _put(det, "y_pixel_size", np.float64(qm.pixel_size), keep_dtype=True)
        _put(det, "distance", np.float64(qm.detector_distance), keep_dtype=True)
        _put(det, "beam_center_x", np.float64(qm.beam_center_x), keep_dtype=True)
        _put(det, "beam_center_y", np.float64(qm.beam_center_y), keep_dtype=True)
        beam = entry.create_group("instrument/incident_beam")
        if qm.energy_kev is not None:
            _put(beam, "incident_energy", np.float64(qm.energy_kev), keep_dtype=True)
        entry.create_group("instrument/bluesky/metadata")
        sample = entry.create_group("sample")
        for key, val in result.sample.items():
            unit = None
            if isinstance(val, tuple) and len(val) == 2 and isinstance(val[1], str):
                val, unit = val
            unit = unit or result.sample_units.get(key)
            if isinstance(val, Mapping):
                _put_dict(sample.require_group(key), val)
                continue
            _put_dict(sample, {key: val})
            if unit:
                sample[key].attrs["units"] = unit
        xpcs = f.create_group("xpcs")
        write_qmap_group(xpcs.create_group("qmap"), qm)
        tm = xpcs.create_group("temporal_mean")
        img = (
            np.zeros((h, w))
            if saxs_2d is None
            else np.asarray(saxs_2d, dtype=np.float64)
        )
        if img.shape != (h, w):
            raise ValueError(
                f"saxs_2d shape {img.shape} does not match the q-map {(h, w)}"
            )
        _put(tm, "scattering_2d", img[None])
        _put(
            tm,
            "scattering_1d",
            np.asarray(result.saxs_1d, dtype=np.float64).reshape(1, -1),
        )
        if result.saxs_1d_segments is not None:
            _put(tm, "scattering_1d_segments", np.asarray(result.saxs_1d_segments))
        if result.intensity_vs_time is not None:
            _put(
                xpcs.create_group("spatial_mean"),
                "intensity_vs_time",
                np.asarray(result.intensity_vs_time),
            )

        mt = result.multitau
        if mt is not None:
            g = xpcs.create_group("multitau")
            _put(g, "delay_list", np.asarray(mt.delay_frames, dtype=np.int64))
            _put(g, "normalized_g2", np.asarray(mt.g2))
            _put(g, "normalized_g2_err", np.asarray(mt.g2_err))
            cfg = dict(mt.config)
            cfg["stride_frame"] = int(mt.stride_frame)
            cfg["avg_frame"] = int(mt.avg_frame)
            _put_dict(g.create_group("config"), cfg)
            if mt.g2_partial is not None:
                _put(g, "normalized_g2_partial", np.asarray(mt.g2_partial))
                if mt.g2_partial_err is not None:
                    _put(g, "normalized_g2_partial_err", np.asarray(mt.g2_partial_err))
                if mt.g2_partial_labels is not None:
                    _put(
                        g,
                        "normalized_g2_partial_labels",
                        np.asarray(mt.g2_partial_labels),
                    )
            if g2_stack is not None:
                stack = np.asarray(g2_stack)
                if stack.ndim != 4 or stack.shape[1] != 3 or stack.shape[2:] != (h, w):
                    raise ValueError(
                        f"g2_stack must be (T, 3, {h}, {w}), got {stack.shape}"
                    )
                _put(g, "unnormalized_G2", stack)
            elif g2_stack_file is not None:
                link_g2_stack(g, g2_stack_file)

        tt = result.twotime
        if tt is not None:
            g = xpcs.create_group("twotime")
            bins = np.asarray(tt.processed_bins)
            _put(
                g,
                "processed_bins",
                bins.astype(
                    np.asarray(qm.dynamic_index_mapping).dtype
                    if bins.size
                    else np.int64
                ),
            )
            cmap = g.create_group("correlation_map")
            full_list, seg_list = [], []
            count = 0
            for i, c2 in enumerate(_c2_iter(c2_maps)):
                c2 = np.asarray(c2)
                if c2.shape != (tt.n_frames, tt.n_frames):
                    raise ValueError(
                        f"c2 map {i} has shape {c2.shape}, expected "
                        f"({tt.n_frames}, {tt.n_frames})"
                    )
                if tt.g2_full is None:
                    fg, sg = _g2_from_c2(c2)
                    full_list.append(fg)
                    seg_list.append(sg)
                _put_c2(cmap, f"c2_{i + 1:05d}", c2)
                count += 1
            if count and count != bins.size:
                raise ValueError(f"{count} c2 maps for {bins.size} processed bins")
            g2_full = (
                tt.g2_full
                if tt.g2_full is not None
                else (np.array(full_list) if full_list else None)
            )
            g2_seg = (
                tt.g2_segments
                if tt.g2_segments is not None
                else (np.array(seg_list) if seg_list else None)
            )
            if g2_full is not None:
                _put(
                    g, "normalized_g2", np.asarray(g2_full).T
                )  # file orientation (N, Np)
            if g2_seg is not None:
                _put(
                    g, "normalized_g2_segments", np.asarray(g2_seg).transpose(2, 1, 0)
                )  # (N//5, 5, Np)
            cfg = dict(tt.config)
            cfg["stride_frame"] = int(tt.stride_frame)
            cfg["avg_frame"] = int(tt.avg_frame)
            _put_dict(g.create_group("config"), cfg)
        if age_lag is not None:
            write_age_lag_group(xpcs.require_group("twotime"), age_lag)
        if twotime_groups is not None:
            if tt is None:
                raise ValueError("two-time group maps need the two-time result")
            write_twotime_groups_group(xpcs["twotime"], twotime_groups)
        if age_lag_groups is not None:
            if age_lag is None:
                raise ValueError("age x lag group maps need the age x lag map")
            write_age_lag_groups_group(xpcs["twotime"], age_lag_groups)
        # Pass-through metadata last, so that it never pre-creates a group the
        # layout above creates (a "xpcs/..." key used to make /xpcs first), and
        # never overwrites what was written from the result itself.
        for key, val in result.metadata.items():
            if not (key.startswith("entry/") or key.startswith("xpcs/")) or val is None:
                continue
            unit = None
            if key.endswith(")") and " (" in key:
                key, unit = key[:-1].rsplit(" (", 1)
            parent, _, name = key.rpartition("/")
            try:
                grp = f.require_group(parent)
            except TypeError:  # a dataset already sits where the group would go
                continue
            if name in grp:
                continue
            _put_dict(grp, {name: val})
            if unit:
                grp[name].attrs["units"] = unit
    return Path(path)


def write_result_with_g2_stack(path: str | Path, produce: Callable[[G2StackWriter], Any],
                               n_delays: int, shape: tuple[int, int], *,
                               overwrite: bool = False) -> tuple[Path, Any]:
    """Make a result while streaming its G2 stack to the side file, then write both.

    ``produce(sink)`` computes the result, calling ``sink(k, plane)`` for every delay,
    and returns an object with ``result``, ``saxs_2d`` and ``c2_maps`` (e.g. a
    :class:`~xpcsviewer.compute.pipeline.CorrelatedResult`). The side file is
    complete (renamed) before the result file that links to it is written; if that
    fails, the side file is removed too. Returns the result's path and what
    ``produce`` returned.
    """
    side = g2_side_path(path)
    with open_g2_stack_writer(side, n_delays, shape, overwrite=overwrite) as sink:
        made = produce(sink)
    try:
        out = write_result(path, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps,
                           g2_stack_file=side.name, overwrite=overwrite,
                           twotime_groups=getattr(made, "twotime_groups", None))
    except BaseException:
        side.unlink(missing_ok=True)  # no side file without its result
        raise
    return out, made
