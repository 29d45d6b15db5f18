"""The per-pixel G2/IP/IF stack in its side file, written one delay at a time.

Layout (result-file-format.md §1, §3, §9): the side file ``<name>_results_G2.hdf``
next to ``<name>_results.hdf`` holds dataset ``/G2IPIF`` (T, 3, H, W) float32
(channel 0 = G2, 1 = IP, 2 = IF), one lzf chunk per (delay, channel) image; the
result file links to it with a relative HDF5 ExternalLink at
``/xpcs/multitau/unnormalized_G2`` (the upper-case name every viewer reads).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io.outputs import atomic_path, check_h5_output, open_h5_output

__all__ = [
    "G2_SIDE_DATASET",
    "G2StackWriter",
    "describe_g2_side_file",
    "g2_side_path",
    "link_g2_stack",
    "open_g2_stack_writer",
]

G2_SIDE_DATASET = "/G2IPIF"


def g2_side_path(result_path: str | Path) -> Path:
    """The side file of a result file: ``X_results.hdf`` -> ``X_results_G2.hdf``."""
    p = Path(result_path)
    return p.with_name(f"{p.stem}_G2{p.suffix or '.hdf'}")


def describe_g2_side_file(path: str | Path) -> dict[str, Any] | None:
    """What a per-pixel G2 side file holds, or None when ``path`` is not one.

    A side file holds ``/G2IPIF`` and no ``/xpcs/qmap``. Returns ``stack_shape``
    (T, 3, H, W), ``channels``, ``result_file`` (``X_results.hdf`` for
    ``X_results_G2.hdf``, None when the name says nothing or it is absent) and
    ``linked`` (that result file's ``unnormalized_G2`` links to this file).
    """
    p = Path(path)
    if not p.is_file():  # a FIFO would block HDF5's open
        return None
    from xpcsviewer.io._h5links import pointers_ok

    try:
        with h5py.File(p, "r", locking=False) as f:
            if not pointers_ok(f):  # a link to a FIFO would hang the lookups below
                return None
            ds = f.get(G2_SIDE_DATASET)
            if not isinstance(ds, h5py.Dataset) or "xpcs/qmap" in f:
                return None
            shape = [int(n) for n in ds.shape]
            channels = [c.decode() if isinstance(c, bytes) else str(c)
                        for c in ds.attrs.get("channels", [])]
    except (OSError, KeyError, ValueError):
        return None
    result = None
    if p.stem.endswith("_G2"):
        cand = p.with_name(p.stem[:-3] + p.suffix)
        result = cand if cand.is_file() else None
    linked = False
    if result is not None:
        try:
            with h5py.File(result, "r", locking=False) as f:
                grp = f.get("xpcs/multitau") if pointers_ok(f) else None
                link = grp.get("unnormalized_G2", getlink=True) if grp is not None else None
                linked = isinstance(link, h5py.ExternalLink) and Path(link.filename).name == p.name
        except (OSError, KeyError, ValueError):
            linked = False
    return {"stack_shape": shape, "channels": channels,
            "result_file": None if result is None else str(result), "linked": linked}


class G2StackWriter:
    """Writes delay planes into an open ``/G2IPIF`` dataset (call it with ``(k, plane)``).

    Every delay must be written once; :attr:`written` counts them.
    """

    def __init__(self, dataset: h5py.Dataset) -> None:
        self.dataset = dataset
        self.written = 0

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(T, 3, H, W)."""
        return tuple(self.dataset.shape)  # type: ignore[return-value]

    def __call__(self, k: int, plane: np.ndarray) -> None:
        """Store delay ``k``: ``plane`` is (3, H, W) G2, IP, IF."""
        plane = np.asarray(plane)
        if plane.shape != self.shape[1:]:
            raise ValueError(f"plane of shape {plane.shape}, expected {self.shape[1:]}")
        if not 0 <= k < self.shape[0]:
            raise IndexError(f"delay {k} outside 0..{self.shape[0] - 1}")
        self.dataset[k] = plane.astype(np.float32, copy=False)
        check_h5_output(self.dataset)  # a full disk stops the stack here
        self.written += 1


@contextlib.contextmanager
def open_g2_stack_writer(
    side_path: str | Path, n_delays: int, shape: tuple[int, int], *, overwrite: bool = False
) -> Iterator[G2StackWriter]:
    """A side file being written (atomically): yields the writer, renames on success.

    Parameters
    ----------
    side_path : path
        Usually :func:`g2_side_path` of the result file.
    n_delays : int
        T, the length of the result's delay list.
    shape : (H, W)
        Detector shape.
    overwrite : bool
        Replace an existing side file (the caller checked the output rule).

    Raises
    ------
    FileExistsError
        ``side_path`` exists and ``overwrite`` is False.
    ValueError
        Not every delay was written.
    """
    side = Path(side_path)
    if side.exists() and not overwrite:
        raise FileExistsError(f"{side} exists (use overwrite=True)")
    h, w = int(shape[0]), int(shape[1])
    comp = {"compression": "lzf"} if "lzf" in h5py.filters.decode else {"compression": "gzip"}
    with atomic_path(side) as tmp, open_h5_output(tmp) as f:
        ds = f.create_dataset(
            G2_SIDE_DATASET.lstrip("/"), shape=(int(n_delays), 3, h, w), dtype=np.float32,
            chunks=(1, 1, h, w), **comp,
        )
        ds.attrs.create("channels", ["G2", "IP", "IF"], dtype=h5py.string_dtype())
        writer = G2StackWriter(ds)
        yield writer
        if writer.written < int(n_delays):
            raise ValueError(f"{writer.written} of {n_delays} delays written to {side.name}")


def link_g2_stack(group: h5py.Group, side_name: str) -> None:
    """Add the ExternalLink ``unnormalized_G2`` -> ``side_name:/G2IPIF`` to ``group``."""
    if "unnormalized_G2" in group:
        del group["unnormalized_G2"]
    group["unnormalized_G2"] = h5py.ExternalLink(side_name, G2_SIDE_DATASET)
