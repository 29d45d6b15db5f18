"""The XLA photon engine (issue 47) equals the CPU photon path on every layout it takes;
compiled programs per job and host->device bytes stay bounded and flat."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from xpcsviewer.backends import get_transfer_stats, reset_transfer_stats
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau import _photons_xla
from xpcsviewer.compute.multitau._photons_xla import correlate_events_xla
from xpcsviewer.compute.multitau.photons import correlate_multitau_events
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.model.events import EventBlock

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None or importlib.util.find_spec("jax") is None,
    reason="the reference is the numba photon correlator; the engine needs JAX")


def blocks_of(movie: np.ndarray, k: int, dup: bool = False, float_values: bool = False):
    """EventBlocks of k frames each from a dense movie; ``dup``: each hit split into two
    events of one frame (event lists repeat pixels)."""
    n, h, w = movie.shape
    for a in range(0, n, k):
        sub = movie[a: a + k].reshape(-1, h * w)
        f, p = np.nonzero(sub)
        v = sub[f, p]
        f = (f + a).astype(np.int64)
        p = p.astype(np.int32)
        if dup:
            one = v > 1
            f = np.concatenate([f, f[one]])
            p = np.concatenate([p, p[one]])
            v = np.concatenate([np.where(one, v - 1, v), np.ones(int(one.sum()), v.dtype)])
            o = np.argsort(f, kind="stable")
            f, p, v = f[o], p[o], v[o]
        yield EventBlock(a, min(n, a + k), f, p,
                         v.astype(np.float64) if float_values else v)


def _partition(h: int, w: int) -> Partition:
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    dq = (r // 4).astype(int) + 1
    sq = (r // 2).astype(int) + 1
    mask = np.ones((h, w), bool)
    mask[:2, :3] = False  # masked pixels: their hits are dropped (the lut)
    return Partition(dq, sq, mask)


def _movie(rng, n, h=14, w=18, occ=0.05):
    m = ((rng.random((n, h, w)) < occ) * rng.integers(1, 5, (n, h, w))).astype(np.uint16)
    m[:, 5, 6] = rng.integers(1, 3, n)  # a pixel hit in every frame
    m[n // 7: n // 7 + 40] = 0  # frames without a photon
    m[:, 9, 9] = 0
    m[n // 2, 9, 9] = 3  # a pixel hit once
    m[-1, 3, 4] = 2  # a hit in the last frame
    return m


def _close(a, b, rtol=1e-12):
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    np.testing.assert_allclose(a[ok], b[ok], rtol=rtol, atol=1e-15)


def _both(movie, k, spec=None, options=None, **kw):
    part = _partition(*movie.shape[1:])
    stream = FrameStream(lambda: blocks_of(movie, k, **kw), movie.shape[0])
    ref = correlate_multitau_events(stream, part, spec, options=options)
    got = correlate_events_xla(stream, part, spec, options=options, device="cpu")
    return ref, got


def _same(ref, got):
    ref = getattr(ref, "multitau", ref)
    got = getattr(got, "multitau", got)
    np.testing.assert_array_equal(got.delay_frames, ref.delay_frames)
    _close(got.g2, ref.g2)
    _close(got.g2_err, ref.g2_err)
    _close(got.g2_static, ref.g2_static)


@pytest.mark.parametrize("n, occ", [(2, 0.6), (3, 0.05), (17, 0.3), (257, 0.05),
                                    (701, 0.003), (701, 0.6)])
def test_equals_the_cpu_photon_path(rng, n, occ):
    movie = _movie(rng, n, occ=occ) if n > 50 else (
        (rng.random((n, 6, 7)) < occ) * rng.integers(1, 4, (n, 6, 7))).astype(np.uint8)
    ref, got = _both(movie, 64)
    _same(ref, got)
    assert got.config["engine"] == "xla" and got.config["path"] == "sparse"
    assert got.config["events"] == ref.config["events"]


@pytest.mark.parametrize("dpl", [2, 8])
def test_delays_per_level_blocks_and_duplicates(rng, dpl):
    movie = _movie(rng, 900, occ=0.02)
    opt = MultitauOptions(delays_per_level=dpl)
    _same(*_both(movie, 7, options=opt, dup=True))
    _same(*_both(movie, 10_000, options=opt, float_values=True))


def test_normalize_frame_and_partial_g2(rng):
    movie = _movie(rng, 613, occ=0.03)
    spec = CorrelateSpec(normalize_frame=True, num_partial_g2=3)
    ref, got = _both(movie, 50, spec=spec)
    _same(ref, got)
    np.testing.assert_array_equal(got.g2_partial_labels, ref.g2_partial_labels)
    _close(got.g2_partial, ref.g2_partial)
    _close(got.g2_partial_err, ref.g2_partial_err)


def test_scattering_means_are_the_cpu_engine_s(rng):
    movie = _movie(rng, 300, occ=0.04)
    opt = MultitauOptions(with_scattering=True)
    ref, got = _both(movie, 33, options=opt)
    _same(ref, got)
    np.testing.assert_array_equal(got.scattering.mean_image(), ref.scattering.mean_image())


def test_a_chunk_boundary_inside_a_frame(rng, monkeypatch):
    movie = _movie(rng, 400, occ=0.05)
    part = _partition(*movie.shape[1:])
    stream = FrameStream(lambda: blocks_of(movie, 9, dup=True), movie.shape[0])
    ref = correlate_multitau_events(stream, part)
    monkeypatch.setattr(_photons_xla, "CHUNK", 37)
    corr = _photons_xla.XlaPhotonMultitau(part.pixels(), movie.shape[0], chunk=37)
    for b in stream.open():
        corr.add_events(b.stop, b.frame, b.pixel, b.value)
    g2, err, g2s = corr.result()
    _close(g2, ref.g2)
    _close(err, ref.g2_err)
    _close(g2s, ref.g2_static)


def test_frames_beyond_2_to_the_29(rng):
    """Frames past 2^29 (the frames take 8 bytes on the device, as time tags would)."""
    n = (1 << 30) + 5
    part = _partition(6, 7)
    pix = np.flatnonzero(part.pixels().static_id >= 0)
    t = np.sort(np.concatenate([rng.integers(0, n, 300), np.arange(40), n - 1 - np.arange(40),
                                (1 << 29) + np.arange(30)]))
    idx = part.pixels().pixel_index[rng.integers(0, pix.size, t.size)]
    blk = EventBlock(0, n, t.astype(np.int64), idx.astype(np.int64),
                     rng.integers(1, 3, t.size).astype(np.uint8))
    stream = FrameStream(lambda: iter([blk]), n)
    _same(correlate_multitau_events(stream, part),
          correlate_events_xla(stream, part, device="cpu"))


def test_per_pixel_planes_are_the_cpu_engine_s(rng):
    movie = _movie(rng, 300, occ=0.1)
    got, ref = {}, {}
    for engine, store in (("xla", got), ("cpu", ref)):
        opt = MultitauOptions(pixel_sink=lambda k, p, store=store: store.__setitem__(
            k, p.copy()))
        run = correlate_events_xla if engine == "xla" else correlate_multitau_events
        run(FrameStream(lambda: blocks_of(movie, 21), 300), _partition(*movie.shape[1:]),
            options=opt)
    assert sorted(got) == sorted(ref) and len(got) > 10
    for k in ref:
        # float32 planes: equal, or one float32 rounding apart
        np.testing.assert_allclose(got[k], ref[k], rtol=2e-7, atol=0)


def _run_counted(movie, k):
    from xpcsviewer.backends.jax_backend import compile_counts

    part = _partition(*movie.shape[1:])
    blocks = list(blocks_of(movie, k))
    event_bytes = sum(b.frame.nbytes + b.pixel.nbytes + b.value.nbytes for b in blocks)
    _photons_xla._PROGRAMS.clear()
    before = compile_counts()["lowered"]
    reset_transfer_stats()
    correlate_events_xla(FrameStream(lambda: iter(blocks), movie.shape[0]), part,
                         device="cpu")
    return (compile_counts()["lowered"] - before,
            get_transfer_stats().host_to_device_bytes, event_bytes)


def test_programs_and_bytes_per_job_are_flat(rng):
    """<= 8 programs per job, the same at 2x the frames and 2x the hits; host->device
    bytes <= 1.1x the event bytes (the pixel table and bin ids included)."""
    h, w = 40, 50
    runs = {}
    for name, n, occ in (("base", 2000, 0.02), ("2x frames", 4000, 0.02),
                         ("2x hits", 2000, 0.04)):
        movie = _movie(rng, n, h, w, occ=occ)
        runs[name] = _run_counted(movie, 128)
    progs = {k: v[0] for k, v in runs.items()}
    assert max(progs.values()) <= 8, progs
    assert len(set(progs.values())) == 1, progs
    for name, (_, sent, ev) in runs.items():
        assert sent <= 1.1 * ev, (name, sent, ev)
