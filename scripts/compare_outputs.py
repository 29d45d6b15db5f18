"""Compare the outputs of two runs of ``scripts/same_outputs.sh`` (a refactor changes nothing).

Usage::

    python scripts/compare_outputs.py OUT_BEFORE OUT_AFTER

JSON: equal after dropping timing keys; HDF5: every dataset equal (NaN = NaN; times and
paths left out); SVG: equal after renaming matplotlib's random ids in order and reading
embedded PNGs by their pixels (their encoding varies from run to run); other files: bytes.
"""
import sys, json, h5py, numpy as np, filecmp
from pathlib import Path
a, b = Path(sys.argv[1]), Path(sys.argv[2])
def strip(d):
    if isinstance(d, dict):
        return {k: strip(v) for k, v in d.items() if k not in ("seconds", "elapsed_s", "created", "time", "timing", "wall_s")}
    if isinstance(d, list):
        return [strip(x) for x in d]
    return d
for f in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
    pa, pb = a / f, b / f
    if not pb.exists():
        print("MISSING", f); continue
    if f.suffix == ".json":
        same = strip(json.loads(pa.read_text())) == strip(json.loads(pb.read_text()))
        print(("same " if same else "DIFF ") + str(f), "(bytes equal)" if filecmp.cmp(pa, pb, shallow=False) else "")
    elif f.suffix == ".hdf":
        diffs = []
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                x, y = obj[()], hb[name][()] if name in hb else None
                if y is None: diffs.append("missing " + name); return
                if isinstance(x, np.ndarray) and x.dtype.kind in "fiu":
                    if x.shape != y.shape or not np.array_equal(x, y, equal_nan=True): diffs.append(name)
                elif "time" not in name and "path" not in name and not np.array_equal(np.asarray(x, dtype=object), np.asarray(y, dtype=object)): diffs.append(name)
        with h5py.File(pa) as ha, h5py.File(pb) as hb:
            ha.visititems(visit)
        print(("same " if not diffs else "DIFF ") + str(f), diffs[:8])
    elif f.suffix == ".svg":
        import re
        def norm(t):
            ids = {}
            def sub(m):
                return ids.setdefault(m.group(0), f"ID{len(ids)}")
            t = re.sub(r"<dc:date>.*?</dc:date>", "", t)
            import base64, hashlib, io
            from PIL import Image
            def pix(m):
                a = np.asarray(Image.open(io.BytesIO(base64.b64decode(m.group(1)))))
                return "PIXELS" + hashlib.sha1(a.tobytes()).hexdigest()
            t = re.sub(r"data:image/png;base64,\s*([A-Za-z0-9+/=\s]+)", pix, t)
            return re.sub(r"(?:\b[mp]|image)[0-9a-f]{10}\b", sub, t)
        same = norm(pa.read_text()) == norm(pb.read_text())
        print(("same " if same else "DIFF ") + str(f), "(random SVG ids renamed in order, embedded PNGs by pixels)")
    else:
        print(("same " if filecmp.cmp(pa, pb, shallow=False) else "DIFF ") + str(f))
