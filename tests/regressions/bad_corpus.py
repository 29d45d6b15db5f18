"""The bad-file corpus of issue 11, generated with h5py (never committed).

Each :class:`Case` is one file and what a command must say about it: the file is
named on one line, with ``dataset`` (the HDF5 path, or a word of the problem)
when the problem is inside the file. ``kind`` says which commands take it:
``"result"`` (info, fit, export, average, snapshot), ``"raw"`` (correlate's
frames), ``"qmap"`` (correlate's partition), ``"mask"`` (qmap --mask).
``"degenerate"`` result files are readable but hold data no figure can show.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io.results.writer import write_qmap_file, write_result
from xpcsviewer.synthetic.results import build_result

SPEC = {
    "name": "corpus",
    "geometry": {"shape": (32, 40), "bcx": 20.0, "bcy": 15.0, "det_dist_m": 5.0},
    "partition": {"dq_num": 4, "sq_num": 16},
    "acquisition": {"frame_time": 1e-3, "n_frames": 400, "rate": 0.5},
    "sample": {"radius_m": 150e-9, "contrast": 0.2},
    "analysis": ("Multitau", "Twotime"),
    "twotime": {"n_frames": 60, "bins": [1, 2]},
}
MT = "/xpcs/multitau"
QM = "/xpcs/qmap"
RAW = "/entry/data/data"


@dataclass
class Case:
    """One bad input and the words its error line must hold."""

    name: str
    kind: str
    path: Path
    dataset: str | None = None


def write_good(path: Path, *, stack: bool = False) -> Path:
    """A small valid result file (multi-tau and two-time)."""
    res, extras = build_result(SPEC, seed=7)
    g2_stack = None
    if stack:
        t = res.multitau.g2.shape[0]
        g2_stack = np.ones((t, 3, *res.qmap.shape))
    write_result(
        path,
        res,
        saxs_2d=extras["saxs_2d"],
        c2_maps=extras["c2_maps"],
        g2_stack=g2_stack,
    )
    return path


def _variant(good: Path, path: Path, edit) -> Path:
    shutil.copyfile(good, path)
    with h5py.File(path, "a") as f:
        edit(f)
    return path


def _replace(f: h5py.File, name: str, **kw) -> None:
    del f[name]
    f.create_dataset(name, **kw)


def _corrupt_chunk(f: h5py.File) -> None:
    g = f[f"{MT}/normalized_g2"][()]
    del f[f"{MT}/normalized_g2"]
    f.create_dataset(f"{MT}/normalized_g2", data=g, chunks=g.shape, compression="gzip")


def _missing_filter(f: h5py.File) -> None:
    g = f[f"{MT}/normalized_g2"][()].astype(np.float32)
    del f[f"{MT}/normalized_g2"]
    # 32001 (Blosc) is not part of plain h5py: reading needs a plugin we lack.
    ds = f.create_dataset(
        f"{MT}/normalized_g2",
        shape=g.shape,
        dtype=np.float32,
        chunks=g.shape,
        compression=32001,
        allow_unknown_filter=True,
    )
    ds.id.write_direct_chunk((0, 0), g.tobytes())


def _delays(values):
    def edit(f: h5py.File) -> None:
        d = f[f"{MT}/delay_list"][()].astype(np.float64)
        d[: len(values)] = values
        _replace(f, f"{MT}/delay_list", data=d)

    return edit


def _zero_delays(f: h5py.File) -> None:
    nd = f[f"{MT}/normalized_g2"].shape[1]
    _replace(f, f"{MT}/delay_list", data=np.zeros(0, np.int64))
    _replace(f, f"{MT}/normalized_g2", data=np.zeros((0, nd), np.float32))
    _replace(f, f"{MT}/normalized_g2_err", data=np.zeros((0, nd), np.float32))
    del f["/xpcs/twotime"]


def _zero_dynamic_bins(f: h5py.File) -> None:
    t = f[f"{MT}/delay_list"].shape[0]
    shape = f[f"{QM}/dynamic_roi_map"].shape
    _replace(f, f"{QM}/dynamic_roi_map", data=np.zeros(shape, np.uint32))
    _replace(f, f"{QM}/dynamic_index_mapping", data=np.zeros(0, np.int64))
    _replace(f, f"{MT}/normalized_g2", data=np.zeros((t, 0), np.float32))
    _replace(f, f"{MT}/normalized_g2_err", data=np.zeros((t, 0), np.float32))
    del f["/xpcs/twotime"]


def _nan_centres(value):
    def edit(f: h5py.File) -> None:
        v = f[f"{QM}/dynamic_v_list_dim0"][()]
        v[0] = value
        f[f"{QM}/dynamic_v_list_dim0"][...] = v

    return edit


def _huge(name: str, shape, dtype=np.float32):
    def edit(f: h5py.File) -> None:
        del f[name]
        f.create_dataset(
            name, shape=shape, dtype=dtype, chunks=tuple(min(64, n) for n in shape)
        )

    return edit


def _huge_consistent_g2(f: h5py.File) -> None:
    """g2 declared (30000, Nd) as the delay list allows, chunked and never written."""
    n = 30000
    nd = f[f"{MT}/normalized_g2"].shape[1]
    del f["/xpcs/twotime"]
    _replace(f, f"{MT}/delay_list", data=np.arange(1, n + 1, dtype=np.int64))
    for name in ("normalized_g2", "normalized_g2_err"):
        del f[f"{MT}/{name}"]
        f.create_dataset(
            f"{MT}/{name}", shape=(n, nd), dtype=np.float32, chunks=(256, nd)
        )


def _dangling(name: str, external: bool = False):
    def edit(f: h5py.File) -> None:
        del f[name]
        f[name] = (
            h5py.ExternalLink("no_such_side_file.h5", "/data")
            if external
            else h5py.SoftLink("/no/such/dataset")
        )

    return edit


def _stack_short(f: h5py.File) -> None:
    t = f[f"{MT}/delay_list"].shape[0]
    s = f[f"{MT}/unnormalized_G2"][: t - 3]
    _replace(f, f"{MT}/unnormalized_G2", data=s)


def _set(name: str, value):
    def edit(f: h5py.File) -> None:
        if name in f:
            del f[name]
        f[name] = value

    return edit


def _fill(name: str, value):
    def edit(f: h5py.File) -> None:
        a = f[name][()]
        a[...] = value
        f[name][...] = a

    return edit


def build_result_cases(d: Path, good: Path, stack_good: Path) -> list[Case]:
    """Unreadable or impossible result files: every command must exit 3 naming them."""
    d.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def add(
        name: str,
        dataset: str | None,
        edit=None,
        path: Path | None = None,
        src: Path = good,
    ) -> None:
        p = path if path is not None else d / f"{name}_results.hdf"
        if edit is not None:
            _variant(src, p, edit)
        cases.append(Case(name, "result", p, dataset))

    (d / "not_hdf5_results.hdf").write_text("just some text\n" * 50)
    add("not_hdf5", "not an HDF5 file", path=d / "not_hdf5_results.hdf")
    (d / "empty_results.hdf").write_bytes(b"")
    add("empty", "empty", path=d / "empty_results.hdf")
    data = good.read_bytes()
    (d / "truncated_results.hdf").write_bytes(data[: len(data) // 3])
    add("truncated", "truncated", path=d / "truncated_results.hdf")
    add("missing_file", "not found", path=d / "no_such_results.hdf")
    (d / "a_folder_results.hdf").mkdir(exist_ok=True)
    add("folder", "folder", path=d / "a_folder_results.hdf")
    pq = d / "partition_only.hdf"
    shutil.copyfile(good, pq)
    with h5py.File(pq, "a") as f:
        f.move("/xpcs/qmap", "/qmap")
        del f["/xpcs"]
    add("partition_file", "partition", path=pq)
    add(
        "no_results",
        "no analysis results",
        lambda f: (f.__delitem__(MT), f.__delitem__("/xpcs/twotime")),
    )
    add("missing_mask", f"{QM}/mask", lambda f: f.__delitem__(f"{QM}/mask"))
    add(
        "missing_delays",
        f"{MT}/delay_list",
        lambda f: f.__delitem__(f"{MT}/delay_list"),
    )
    # declared sizes
    add("g2_declared_huge", f"{MT}/normalized_g2", _huge_consistent_g2)
    add(
        "g2_never_written",
        f"{MT}/normalized_g2",
        lambda f: _replace(
            f, f"{MT}/normalized_g2", shape=f[f"{MT}/normalized_g2"].shape, dtype="f4"
        ),
    )
    add(
        "g2_wrong_shape_huge",
        f"{MT}/normalized_g2",
        _huge(f"{MT}/normalized_g2", (30000, 30000)),
    )
    add(
        "mask_declared_huge",
        f"{QM}/mask",
        _huge(f"{QM}/mask", (10**6, 10**6), np.uint8),
    )
    add(
        "err_declared_huge",
        f"{MT}/normalized_g2_err",
        _huge(f"{MT}/normalized_g2_err", (10**6, 10**6)),
    )
    add(
        "intensity_declared_huge",
        "/xpcs/spatial_mean/intensity_vs_time",
        _huge("/xpcs/spatial_mean/intensity_vs_time", (2, 10**12)),
    )
    add(
        "saxs1d_declared_huge",
        "/xpcs/temporal_mean/scattering_1d",
        _huge("/xpcs/temporal_mean/scattering_1d", (10**6, 10**6)),
    )
    add(
        "partial_declared_huge",
        f"{MT}/normalized_g2_partial",
        lambda f: f.create_dataset(
            f"{MT}/normalized_g2_partial",
            shape=(10**6, *f[f"{MT}/normalized_g2"].shape),
            dtype=np.float32,
            chunks=(1, 4, 4),
        ),
    )
    # values the reader must refuse
    add("nan_q_centre", f"{QM}/dynamic_v_list_dim0", _nan_centres(np.nan))
    add("inf_q_centre", f"{QM}/dynamic_v_list_dim0", _nan_centres(np.inf))
    add("zero_delays", f"{MT}/delay_list", _zero_delays)
    add("zero_dynamic_bins", f"{QM}/dynamic_roi_map", _zero_dynamic_bins)
    add("negative_delay", f"{MT}/delay_list", _delays([-1.0]))
    add("zero_delay", f"{MT}/delay_list", _delays([0.0]))
    add("non_monotonic_delays", f"{MT}/delay_list", _delays([5.0, 2.0]))
    add("duplicate_delays", f"{MT}/delay_list", _delays([1.0, 1.0]))
    add("nan_delay", f"{MT}/delay_list", _delays([np.nan]))
    add(
        "avg_frame_negative",
        f"{MT}/config/avg_frame",
        _set(f"{MT}/config/avg_frame", -3),
    )
    add(
        "stride_frame_text",
        f"{MT}/config/stride_frame",
        _set(f"{MT}/config/stride_frame", "two"),
    )
    add(
        "g2_strings",
        f"{MT}/normalized_g2",
        lambda f: _replace(
            f,
            f"{MT}/normalized_g2",
            data=np.full(f[f"{MT}/normalized_g2"].shape, b"x", "S1"),
        ),
    )
    add(
        "frame_time_inf",
        "/entry/instrument/detector_1/frame_time",
        _set("/entry/instrument/detector_1/frame_time", np.inf),
    )
    # damaged data
    p = d / "corrupt_chunk_results.hdf"
    _variant(good, p, _corrupt_chunk)
    with h5py.File(p, "r") as f:
        info = f[f"{MT}/normalized_g2"].id.get_chunk_info(0)
    with open(p, "r+b") as fh:
        fh.seek(info.byte_offset + 2)
        fh.write(b"\xde\xad\xbe\xef" * 8)
    add("corrupt_chunk", f"{MT}/normalized_g2", path=p)
    add("missing_filter", f"{MT}/normalized_g2", _missing_filter)
    add(
        "dangling_soft_link",
        f"{MT}/normalized_g2_err",
        _dangling(f"{MT}/normalized_g2_err"),
    )
    add(
        "dangling_external_link",
        f"{MT}/delay_list",
        _dangling(f"{MT}/delay_list", external=True),
    )
    add("dangling_mask_link", f"{QM}/mask", _dangling(f"{QM}/mask"))
    # issue 24
    loop = d / "loop_results.hdf"
    if not loop.is_symlink():
        os.symlink(loop.name, loop)  # a link to itself
    add("symlink_loop", "symbolic link loop", path=loop)
    nl = Path(os.fspath(d)) / "new\nline_results.hdf"
    nl.write_text("a damaged file whose name holds a newline\n")
    add("newline_name", "not an HDF5 file", path=nl)
    p = d / "killed_truncated_results.hdf"
    data = bytearray(good.read_bytes())
    data[20:24] = (1).to_bytes(4, "little")  # HDF5's open-for-write flag, left set
    p.write_bytes(bytes(data[: 2 * len(data) // 3]))
    add("writer_killed_truncated", "truncated", path=p)
    return cases


def build_degenerate(d: Path, good: Path) -> list[Case]:
    """Readable files whose g2 cannot be drawn or fitted (export skips them)."""
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for name, edit in (
        ("g2_all_nan", _fill(f"{MT}/normalized_g2", np.nan)),
        (
            "g2_all_zero",
            lambda f: (
                _fill(f"{MT}/normalized_g2", 0.0)(f),
                _fill(f"{MT}/normalized_g2_err", 0.0)(f),
            ),
        ),
        ("g2_errors_missing", lambda f: f.__delitem__(f"{MT}/normalized_g2_err")),
        ("g2_errors_negative", lambda f: _fill(f"{MT}/normalized_g2_err", -0.01)(f)),
    ):
        out.append(
            Case(name, "degenerate", _variant(good, d / f"{name}_results.hdf", edit))
        )
    return out


def build_stack_short(d: Path, stack_good: Path) -> Case:
    """A G2 stack with fewer delays than the delay list (``average`` reads it)."""
    return Case(
        "g2_stack_short",
        "result",
        _variant(stack_good, d / "stack_short_results.hdf", _stack_short),
        f"{MT}/unnormalized_G2",
    )


def build_raw_cases(d: Path, shape: tuple[int, int]) -> tuple[Path, list[Case]]:
    """(a good raw file, bad raw files) for ``correlate``."""
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    frames = rng.poisson(0.5, (64, *shape)).astype(np.int32)
    good = d / "raw_good.h5"
    with h5py.File(good, "w") as f:
        f.create_dataset(RAW, data=frames, chunks=(16, *shape))
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    cases = []

    def add(name, dataset, write):
        p = d / f"raw_{name}.h5"
        if write is not None:
            with h5py.File(p, "w") as f:
                write(f)
        cases.append(Case(name, "raw", p, dataset))

    (d / "raw_not_hdf5.h5").write_text("nope\n")
    add("not_hdf5", "not an HDF5 file", None)
    add("missing_dataset", RAW, lambda f: f.create_dataset("/entry/other", data=frames))
    add("dangling_soft", RAW, lambda f: f.__setitem__(RAW, h5py.SoftLink("/nowhere")))
    add(
        "dangling_external",
        RAW,
        lambda f: f.__setitem__(RAW, h5py.ExternalLink("missing_frames.h5", "/data")),
    )
    add(
        "declared_1e9_frames",
        RAW,
        lambda f: f.create_dataset(
            RAW, shape=(10**9, *shape), dtype=np.uint16, chunks=(64, *shape)
        ),
    )
    add("wrong_rank", RAW, lambda f: f.create_dataset(RAW, data=frames[0]))
    add(
        "string_frames",
        RAW,
        lambda f: f.create_dataset(RAW, data=np.full((4, *shape), b"a", "S1")),
    )
    neg = frames.copy()
    neg[3, shape[0] // 2, shape[1] // 2] = -5
    add("negative_counts", RAW, lambda f: f.create_dataset(RAW, data=neg))
    add(
        "frame_time_inf",
        "/entry/instrument/detector_1/frame_time",
        lambda f: (
            f.create_dataset(RAW, data=frames),
            f.__setitem__("/entry/instrument/detector_1/frame_time", np.inf),
        ),
    )
    add("no_frames", RAW, lambda f: f.create_dataset(RAW, data=frames[:0]))
    return good, cases


def build_qmap_cases(d: Path, good_result: Path) -> tuple[Path, list[Case]]:
    """(a good partition file, bad ones) for ``correlate --qmap``."""
    from xpcsviewer.io import read_result

    d.mkdir(parents=True, exist_ok=True)
    qm = read_result(good_result).qmap
    good = write_qmap_file(d / "qmap_good.hdf", qm)
    cases = []
    for name, dataset, edit in (
        (
            "zero_dynamic_bins",
            "/qmap/dynamic_roi_map",
            lambda f: (
                _replace(
                    f,
                    "/qmap/dynamic_roi_map",
                    data=np.zeros(f["/qmap/dynamic_roi_map"].shape, np.uint32),
                ),
                _replace(f, "/qmap/dynamic_index_mapping", data=np.zeros(0, np.int64)),
            ),
        ),
        (
            "nan_centre",
            "/qmap/dynamic_v_list_dim0",
            lambda f: _fill("/qmap/dynamic_v_list_dim0", np.nan)(f),
        ),
        (
            "mask_declared_huge",
            "/qmap/mask",
            _huge("/qmap/mask", (10**6, 10**6), np.uint8),
        ),
        ("zero_mask", "/qmap/mask", _fill("/qmap/mask", 0)),  # issue 24
    ):
        cases.append(
            Case(name, "qmap", _variant(good, d / f"qmap_{name}.hdf", edit), dataset)
        )
    return good, cases


def build_mask_cases(d: Path, shape: tuple[int, int]) -> list[Case]:
    """Bad masks for ``qmap --mask``."""
    d.mkdir(parents=True, exist_ok=True)
    cases = []

    def add(name, dataset, write):
        p = d / f"mask_{name}.hdf"
        with h5py.File(p, "w") as f:
            write(f)
        cases.append(Case(name, "mask", p, dataset))

    add(
        "strings",
        "/mask",
        lambda f: f.create_dataset("mask", data=np.full(shape, b"1", "S1")),
    )
    add(
        "declared_huge",
        "/mask",
        lambda f: f.create_dataset(
            "mask", shape=(10**6, 10**6), dtype=np.uint8, chunks=(64, 64)
        ),
    )
    add(
        "dangling",
        "/qmap/mask",
        lambda f: f.__setitem__("/qmap/mask", h5py.SoftLink("/x")),
    )
    add("all_zero", "all zero", lambda f: f.create_dataset("mask", data=np.zeros(shape)))
    p = d / "mask_wrong_shape.npy"
    np.save(p, np.ones((shape[0] + 1, shape[1])))
    cases.append(Case("wrong_shape", "mask", p, "shape"))
    p = d / "mask_text.npy"
    p.write_text("not numpy")
    cases.append(Case("not_npy", "mask", p, "npy"))
    return cases


def odd_name_copy(d: Path, good: Path) -> Path:
    """A valid file whose name holds a byte that is not UTF-8."""
    p = Path(os.fsdecode(os.fsencode(str(d)) + b"/odd\xffname_results.hdf"))
    shutil.copyfile(good, p)
    return p


# ------------------------------------------------------------------ issue 34
G2 = f"{MT}/normalized_g2"


def build_pointer_cases(d: Path, good: Path) -> tuple[list[Case], list[Case]]:
    """Issue 34: result files whose g2 HDF5 would read from elsewhere.

    Returns (refused always: a FIFO behind a link, a VDS source or external storage,
    the FIFO given directly, a missing VDS source; refused unless ``--allow-external``:
    a regular file outside the folder by an absolute link, ``../``, a VDS source and
    external storage). ``dataset`` holds the words the error must show (the target).
    """
    inside, outside = d / "in", d / "out"
    inside.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    with h5py.File(good, "r") as f:
        g2 = np.asarray(f[G2][()], dtype=np.float64)
    with h5py.File(outside / "other.h5", "w") as f:
        f["g2"] = g2
    # the g2 bytes in a raw file outside, standing for /etc/passwd
    (outside / "passwd").write_bytes(g2.tobytes())
    fifo = inside / "pipe.h5"
    if not fifo.exists():
        os.mkfifo(fifo)

    def vds(src: str):
        def edit(f: h5py.File) -> None:
            del f[G2]
            lay = h5py.VirtualLayout(shape=g2.shape, dtype=np.float64)
            lay[...] = h5py.VirtualSource(src, "/g2", shape=g2.shape)
            f.create_virtual_dataset(G2, lay, fillvalue=0)
        return edit

    def link(target: str):
        def edit(f: h5py.File) -> None:
            del f[G2]
            f[G2] = h5py.ExternalLink(target, "/g2")
        return edit

    def storage(target: Path):
        def edit(f: h5py.File) -> None:
            del f[G2]
            f.create_dataset(G2, shape=g2.shape, dtype=np.float64,
                             external=[(os.fspath(target), 0, g2.nbytes)])
        return edit

    def case(name: str, edit, words: str) -> Case:
        return Case(name, "result", _variant(good, inside / f"{name}_results.hdf", edit),
                    words)

    direct = inside / "fifo_results.hdf"
    if not direct.exists():
        os.mkfifo(direct)
    always = [
        Case("fifo_given", "result", direct, "named pipe"),
        case("link_to_fifo", link("pipe.h5"), "pipe.h5"),
        case("vds_source_fifo", vds("pipe.h5"), "pipe.h5"),
        case("storage_fifo", storage(fifo), "pipe.h5"),
        case("vds_source_missing", vds("gone.h5"), "gone.h5"),
    ]
    outside_cases = [
        case("link_absolute_out", link(os.fspath(outside / "other.h5")), "other.h5"),
        case("link_up_out", link("../out/other.h5"), "../out/other.h5"),
        case("vds_source_out", vds("../out/other.h5"), "../out/other.h5"),
        case("storage_out", storage(outside / "passwd"), "passwd"),
    ]
    return always, outside_cases
