"""Mask images for partitions: ``.npy``, ``.tif``/``.tiff`` (needs ``tifffile``), HDF5."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io.errors import XpcsFileError

__all__ = ["MASK_FILE_PATHS", "read_mask", "write_mask_file"]

_HDF_CANDIDATES = (
    "qmap/mask",
    "xpcs/qmap/mask",
    "mask",
    "data/mask",
    "entry/data/mask",
)


def _read_hdf_mask(path: Path) -> tuple[np.ndarray, str]:
    from xpcsviewer.io._h5 import MAX_PIXELS, _array, open_h5

    def _link(f, name: str):
        try:
            return f.get(name, getlink=True)
        except (KeyError, RuntimeError, OSError, ValueError):
            return None

    def read(f, name: str) -> np.ndarray:
        return _array(
            f,
            name,
            kinds="biuf",
            expected="a 2-D numeric mask image",
            max_elements=MAX_PIXELS,
        )

    with open_h5(path) as f:
        for name in _HDF_CANDIDATES:
            if _link(f, name) is not None:  # a dangling link is reported, not skipped
                return read(f, "/" + name), "/" + name
        found: list[str] = []
        f.visititems(
            lambda n, o: (
                found.append(n) if isinstance(o, h5py.Dataset) and o.ndim == 2 else None
            )
        )
        if len(found) == 1:
            return read(f, "/" + found[0]), "/" + found[0]
    raise XpcsFileError(
        path,
        "no mask dataset found",
        dataset="/qmap/mask",
        expected="a 2-D dataset at /qmap/mask, /mask, or a single 2-D dataset",
    )


def read_mask(path: str | Path, shape: tuple[int, int] | None = None) -> np.ndarray:
    """Read a mask image as (H, W) bool (True = valid pixel, i.e. value > 0).

    Parameters
    ----------
    path : str or Path
        ``.npy``, ``.tif``/``.tiff`` (only when the optional ``tifffile`` package is
        installed) or HDF5 (``.hdf``, ``.h5``, ``.hdf5``, ``.nxs``).
    shape : (H, W), optional
        Expected detector shape; a different shape raises ``XpcsFileError``.
    """
    from xpcsviewer.io.raw import file_kind

    path = Path(path)
    suffix = path.suffix.lower()
    dataset = None
    if not path.is_file():
        from xpcsviewer.io._h5 import _missing_reason

        raise XpcsFileError(path, "is a folder, not a mask file" if path.is_dir()
                            else "mask " + _missing_reason(path))
    kind = file_kind(path)  # the content decides: an HDF5 mask named .npy is HDF5
    if kind == "hdf5":
        arr, dataset = _read_hdf_mask(path)
    elif suffix == ".npy" and kind != "npy":
        raise XpcsFileError(path, "not a .npy array (no NumPy header)",
                            expected="a mask image: .npy, .tif(f) or .hdf")
    elif kind == "npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise XpcsFileError(path, f"not a readable .npy array ({exc})") from None
    elif suffix in (".tif", ".tiff"):
        try:
            import tifffile
        except ImportError:
            raise XpcsFileError(
                path,
                "reading TIFF masks needs the optional package 'tifffile' "
                "(pip install tifffile), or save the mask as .npy or .hdf",
            ) from None
        arr = np.asarray(tifffile.imread(path))
    elif suffix in (".hdf", ".h5", ".hdf5", ".nxs"):
        arr, dataset = _read_hdf_mask(path)  # says "not an HDF5 file"
    else:
        raise XpcsFileError(
            path, f"unknown mask format {suffix!r}", expected=".npy, .tif(f) or .hdf"
        )
    if arr.dtype.kind not in "biuf":
        raise XpcsFileError(
            path,
            f"mask has dtype {arr.dtype}",
            dataset=dataset,
            expected="a numeric or boolean image (nonzero = valid pixel)",
        )
    arr = np.squeeze(arr)
    if arr.ndim != 2:
        raise XpcsFileError(
            path, f"mask has shape {arr.shape}", dataset=dataset, expected="a 2-D image"
        )
    if shape is not None and tuple(arr.shape) != tuple(shape):
        raise XpcsFileError(
            path,
            f"mask has shape {arr.shape}",
            dataset=dataset,
            expected=f"the detector shape {tuple(shape)}",
        )
    return np.asarray(arr) > 0


#: Where mask files are written: pySimpleMask's blemish key (``/qmap/mask``) and the
#: plain ``/mask`` other tools (and our reader) look at; 1 = valid pixel.
MASK_FILE_PATHS = ("/qmap/mask", "/mask")


def write_mask_file(path: str | Path, mask: np.ndarray, *, source: str = "",
                    overwrite: bool = False) -> Path:
    """Write a mask as HDF5 (uint8, 1 = valid) at :data:`MASK_FILE_PATHS`, atomically.

    ``source`` (e.g. the image it was drawn on) goes into the ``source_file`` attribute.
    Raises ``FileExistsError`` for an existing file without ``overwrite``.
    """
    from xpcsviewer.io.results.writer import atomic_h5

    m = (np.asarray(mask) > 0).astype(np.uint8)
    if m.ndim != 2:
        raise ValueError(f"a mask is a 2-D image, got shape {m.shape}")
    with atomic_h5(path, overwrite=overwrite) as f:
        for p in MASK_FILE_PATHS:
            f.create_dataset(p, data=m, compression="gzip", chunks=True)
        f.attrs["source_file"] = source
        f.attrs["convention"] = "1 = valid pixel, 0 = masked"
    return Path(path)
