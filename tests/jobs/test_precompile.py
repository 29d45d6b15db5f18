"""The install step's precompilation covers every numba kernel and every signature the
jobs ask for, so that no job compiles (xpcsviewer.jobs.precompile).

Nothing here compiles: each kernel is replaced by a stand-in that records the argument
types numba would compile for (``numba.typeof``, as its dispatcher types a call) and
runs the kernel's Python source. The precompilation tasks and real jobs on small files
of every reader then run through the same code; the jobs' signatures must be among the
tasks'.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid
from xpcsviewer.compute.detector.qmap import DetectorGeometry

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="the compiled kernels need numba")

PKG = Path(__file__).resolve().parents[2] / "xpcsviewer"


class Recorder:
    """Kernel stand-ins recording ``{kernel: {signature}}``."""

    def __init__(self) -> None:
        self.sigs: dict[str, set[str]] = defaultdict(set)

    @contextlib.contextmanager
    def stubs(self):
        from numba import typeof
        from numba.core.typing.typeof import Purpose

        from xpcsviewer.jobs import precompile

        def stand_in(name, py_func):
            def run(*args):
                self.sigs[name].add(str(tuple(typeof(a, Purpose.argument) for a in args)))
                return py_func(*args)
            return run

        with pytest.MonkeyPatch.context() as mp:
            for name, disp in precompile.kernel_dispatchers().items():
                mod, attr = name.rsplit(".", 1)
                # kernels calling kernels find the stand-in too (module globals)
                mp.setattr(sys.modules[mod], attr, stand_in(name, disp.py_func))
            # small jobs take the compiled engines too
            mp.setattr("xpcsviewer.compute.multitau._cpu.COMPILED_MIN_WORK", 0.0)
            mp.setattr("xpcsviewer.compute.twotime.photons.COMPILED_MIN_PAIRS", 0)
            yield self


def _dtype(sig: str, arg: int = 0) -> str:
    return re.findall(r"Array\((\w+),", sig)[arg]


@pytest.fixture(scope="module")
def task_sigs():
    from xpcsviewer.jobs import precompile

    rec = Recorder()
    with rec.stubs(), np.errstate(all="ignore"):
        for task in precompile.tasks():
            task.run()
    return dict(rec.sigs)


def test_every_njit_lives_in_a_kernel_module():
    from xpcsviewer.jobs.precompile import KERNEL_MODULES

    pat = re.compile(r"@(numba\.)?(njit|jit|vectorize|guvectorize|cfunc|generated_jit)\b")
    found = set()
    for path in PKG.rglob("*.py"):
        if pat.search(path.read_text(encoding="utf-8")):
            rel = path.relative_to(PKG.parent).with_suffix("")
            found.add(".".join(rel.parts))
    assert found == set(KERNEL_MODULES)


def test_tasks_reach_every_kernel(task_sigs):
    from xpcsviewer.jobs import precompile

    kernels = precompile.kernel_dispatchers()
    assert len(kernels) >= 14
    assert sorted(set(kernels) - set(task_sigs)) == []


def test_dense_kernels_for_every_frame_dtype(task_sigs):
    from xpcsviewer.jobs.precompile import DENSE_DTYPES

    for kernel in ("update", "frame_sums"):
        sigs = task_sigs[f"xpcsviewer.compute.multitau._numba.{kernel}"]
        assert {_dtype(s) for s in sigs} >= set(DENSE_DTYPES), kernel


def test_photon_kernels_for_every_hit_layout(task_sigs):
    from xpcsviewer.jobs.precompile import HIT_LAYOUTS, HIT_VALUES

    want = {(f, p, v) for f, p in HIT_LAYOUTS for v in HIT_VALUES}
    for kernel in ("scatter_hits", "hit_sums"):
        sigs = task_sigs[f"xpcsviewer.compute.multitau._photons_numba.{kernel}"]
        assert {(_dtype(s, 0), _dtype(s, 1), _dtype(s, 2)) for s in sigs} >= want, kernel


# ------------------------------------------------------------ the jobs on real readers
def _qmap_file(path, shape, region):
    from xpcsviewer.compute.detector.partition import make_partition
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.synthetic.speckle import Geometry

    geo = Geometry(shape=shape, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=float(region[1].start), bcy=float(region[0].start))
    q, phi = geo.qmap()
    mask = np.zeros(shape, bool)
    mask[region] = True
    qm = make_partition(q, phi, mask, PartitionGrid(2, 4),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0, pixel_size=75e-6,
                                         beam_center_x=float(region[1].start),
                                         beam_center_y=float(region[0].start)))
    return write_qmap_file(path, qm)


def _hits(shape, region, n_frames, rng, per_frame=6):
    rows = np.arange(region[0].start, region[0].stop)
    cols = np.arange(region[1].start, region[1].stop)
    f = np.repeat(np.arange(n_frames), per_frame)
    r = rng.choice(rows, f.size)
    c = rng.choice(cols, f.size)
    p = r * shape[1] + c
    key = np.unique(f * shape[0] * shape[1] + p)
    f, p = key // (shape[0] * shape[1]), key % (shape[0] * shape[1])
    return f, p, rng.integers(1, 4, f.size)


@pytest.fixture(scope="module")
def job_sigs(tmp_path_factory):
    """Signatures of ``xpcsviewer correlate`` on a small file of each reader, with the
    frame selections and modes that change the types handed over."""
    import h5py

    from xpcsviewer.cli import main
    from xpcsviewer.synthetic import sparse_files as sf

    d = tmp_path_factory.mktemp("readers")
    rng = np.random.default_rng(7)
    jobs = []
    # dense frames (.npy uint16 as W1, HDF5 uint32 as an Eiger)
    region = (slice(0, 8), slice(0, 8))
    q8 = _qmap_file(d / "q8.hdf", (8, 8), region)
    frames = rng.poisson(1.0, (40, 8, 8))
    np.save(d / "raw.npy", frames.astype(np.uint16))
    with h5py.File(d / "raw_eiger.h5", "w") as fh:
        fh["/entry/data/data"] = frames.astype(np.uint32)
    jobs += [(d / "raw.npy", q8, ["--mode", "both"]),
             (d / "raw_eiger.h5", q8, ["--mode", "multitau", "--avg-frame", "2"])]
    # Rigaku (one module), ESRF CSR, ImageD11, Timepix
    rshape = (512, 1024)
    rreg = (slice(100, 108), slice(200, 210))
    qr = _qmap_file(d / "qr.hdf", rshape, rreg)
    f, p, c = _hits(rshape, rreg, 48, rng)
    sf.write_rigaku_bin(d / "scan.bin", f, p, c)
    jobs += [(d / "scan.bin", qr, ["--path", "sparse"]),
             (d / "scan.bin", qr, ["--path", "sparse", "--stride-frame", "2"]),
             (d / "scan.bin", qr, ["--path", "sparse", "--mode", "twotime"]),
             (d / "scan.bin", qr, ["--path", "dense", "--end-frame", "16"])]
    sshape = (16, 24)
    sreg = (slice(2, 14), slice(3, 21))
    qs = _qmap_file(d / "qs.hdf", sshape, sreg)
    f, p, c = _hits(sshape, sreg, 48, rng)
    csr = sf.write_esrf_csr(d / "csr_sparse_frame_0_00000.h5", f, p, c, shape=sshape,
                            dtype=np.uint32)[0]
    csrf = sf.write_esrf_csr(d / "csrf_sparse_frame_0_00000.h5", f, p, c, shape=sshape,
                             dtype=np.float32)[0]
    id11 = sf.write_id11_sparse(d / "id11_sparse.h5", f, p, c, sshape, dtype=np.uint16)
    jobs += [(csr, qs, ["--path", "sparse"]),
             (csrf, qs, ["--path", "sparse", "--avg-frame", "2"]),
             (id11, qs, ["--path", "sparse", "--mode", "both"])]
    toa = np.sort(rng.integers(0, 50_000, 300))
    r, cc = rng.integers(2, 14, toa.size), rng.integers(3, 21, toa.size)
    tpx = sf.write_timepix(d / "tpx_events.h5", cc, r, toa, 1.5625e-9, sshape)
    jobs += [(tpx, qs, []),  # time-tag mode
             (tpx, qs, ["--bin-time", "1e-6", "--path", "sparse", "--mode", "twotime"]),
             (tpx, qs, ["--bin-time", "1e-6", "--path", "dense"])]
    rec = Recorder()
    with rec.stubs(), np.errstate(all="ignore"):
        for k, (raw, qmap, opts) in enumerate(jobs):
            rc = main(["correlate", str(raw), "--qmap", str(qmap), "-o",
                       str(d / f"out{k}.hdf"), "--backend", "numpy", "--quiet", *opts])
            assert rc == 0, (raw, opts)
    return dict(rec.sigs)


def test_jobs_on_every_reader_need_no_other_signature(task_sigs, job_sigs):
    # the dense, photon and two-time kernels all ran in these jobs
    assert {k.rsplit(".", 1)[0] for k in job_sigs} == {
        "xpcsviewer.compute.multitau._numba", "xpcsviewer.compute.multitau._photons_numba",
        "xpcsviewer.compute.twotime._numba"}
    extra = {k: sorted(s - task_sigs.get(k, set())) for k, s in job_sigs.items()}
    assert {k: v for k, v in extra.items() if v} == {}


# ------------------------------------------------------------ the cache record
def test_status_is_cold_without_a_matching_record(tmp_path, monkeypatch):
    from xpcsviewer.jobs import precompile

    rec = tmp_path / "record.json"
    monkeypatch.setattr(precompile, "_record_path", lambda: rec)
    st = precompile.cache_status()
    assert not st["warm"] and "no precompilation" in st["reason"]
    assert st["missing"] == [t.name for t in precompile.tasks()]
    ident = precompile._identity()
    rec.write_text(json.dumps({**ident, "numba": "0.0", "tasks": {}}))
    st = precompile.cache_status()
    assert not st["warm"] and "changed" in st["reason"]
    # a recorded signature the index lacks: that task is missing, the others are not
    tasks = {t.name: [] for t in precompile.tasks()}
    tasks["dense uint8"] = [["xpcsviewer.compute.multitau._numba.update", "(no, such)"]]
    rec.write_text(json.dumps({**ident, "tasks": tasks}))
    st = precompile.cache_status()
    assert not st["warm"] and st["missing"] == ["dense uint8"]
    tasks["dense uint8"] = []
    rec.write_text(json.dumps({**ident, "tasks": tasks}))
    assert precompile.cache_status()["warm"]


def test_warm_cache_runs_nothing(tmp_path, monkeypatch):
    from xpcsviewer.jobs import precompile

    monkeypatch.setattr(precompile, "cache_status", lambda: {
        "warm": True, "cache_dir": str(tmp_path), "missing": [], "reason": "test"})
    ran = []
    monkeypatch.setattr(precompile, "_run_tasks", lambda *a, **k: ran.append(a))
    out = precompile.precompile_kernels()
    assert out["ran"] == [] and out["was_warm"] and ran == []
    assert precompile.ensure_kernels()["ran"] == []


def test_guarded_index_writes_still_save(tmp_path):
    from numba.core.caching import IndexDataCacheFile

    from xpcsviewer.jobs import precompile

    assert precompile.guard_cache_writes() in (True, False)
    assert precompile.guard_cache_writes() == precompile.guard_cache_writes()
    cache = IndexDataCacheFile(str(tmp_path), "k-1.py311", b"stamp")
    cache.save(("sig-a",), {"code": 1})
    cache.save(("sig-b",), {"code": 2})
    assert cache.load(("sig-a",)) == {"code": 1}
    assert cache.load(("sig-b",)) == {"code": 2}
