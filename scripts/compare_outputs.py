"""Compare the outputs of two runs of ``scripts/same_outputs.sh`` (a refactor changes nothing).

Usage::

    python scripts/compare_outputs.py OUT_BEFORE OUT_AFTER

JSON: equal after dropping timing keys; HDF5: every dataset equal (NaN = NaN; times and
paths left out); SVG: equal after renaming matplotlib's random ids in order and reading
embedded PNGs by their pixels (their encoding varies from run to run); other files: bytes.
Exit code 1 when anything differs.
"""

from __future__ import annotations

import base64
import filecmp
import hashlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np

TIMING_KEYS = {"seconds", "elapsed_s", "created", "time", "timing", "wall_s"}


def _strip(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items() if k not in TIMING_KEYS}
    if isinstance(d, list):
        return [_strip(x) for x in d]
    return d


def _hdf_diffs(pa: Path, pb: Path) -> list[str]:
    diffs: list[str] = []
    with h5py.File(pa, "r") as ha, h5py.File(pb, "r") as hb:

        def visit(name: str, obj: Any) -> None:
            if not isinstance(obj, h5py.Dataset):
                return
            if name not in hb:
                diffs.append(f"missing {name}")
                return
            x, y = obj[()], hb[name][()]
            if isinstance(x, np.ndarray) and x.dtype.kind in "fiu":
                if x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
                    diffs.append(name)
            elif not _varies(name) and not np.array_equal(
                    np.asarray(x, dtype=object), np.asarray(y, dtype=object)):
                diffs.append(name)

        def extra(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset) and name not in ha:
                diffs.append(f"extra {name}")

        ha.visititems(visit)
        hb.visititems(extra)  # a config key gained counts too
    return diffs


def _varies(name: str) -> bool:
    """Text that differs between runs of the same code: clock times and file paths
    (the run's output folder), not the config's words (``path`` of the photon path)."""
    base = name.rsplit("/", 1)[-1]
    return "time" in base or base in ("raw", "rawdata_path", "source_file") or \
        base.endswith("_file")


def _svg_norm(text: str) -> str:
    from PIL import Image

    def pixels(m: re.Match) -> str:
        a = np.asarray(Image.open(io.BytesIO(base64.b64decode(m.group(1)))))
        return "PIXELS" + hashlib.sha1(a.tobytes()).hexdigest()

    ids: dict[str, str] = {}
    text = re.sub(r"<dc:date>.*?</dc:date>", "", text)
    text = re.sub(r"data:image/png;base64,\s*([A-Za-z0-9+/=\s]+)", pixels, text)
    return re.sub(r"(?:\b[mp]|image)[0-9a-f]{10}\b",
                  lambda m: ids.setdefault(m.group(0), f"ID{len(ids)}"), text)


def main(a: Path, b: Path) -> int:
    bad = 0
    for f in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
        pa, pb = a / f, b / f
        if not pb.exists():
            print(f"MISSING {f}")
            bad += 1
            continue
        if f.suffix == ".json":
            same = _strip(json.loads(pa.read_text())) == _strip(json.loads(pb.read_text()))
            note = "(bytes equal)" if filecmp.cmp(pa, pb, shallow=False) else ""
        elif f.suffix in (".hdf", ".h5"):
            d = _hdf_diffs(pa, pb)
            same, note = not d, ", ".join(d[:8])
        elif f.suffix == ".svg":
            same = _svg_norm(pa.read_text()) == _svg_norm(pb.read_text())
            note = "(ids renamed, embedded PNGs by pixels)"
        else:
            same, note = filecmp.cmp(pa, pb, shallow=False), ""
        bad += not same
        print(f"{'same' if same else 'DIFF'} {f} {note}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
