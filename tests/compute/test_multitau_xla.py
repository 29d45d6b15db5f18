"""The XLA multi-tau engine: same g2 as the NumPy reference, a fixed number of
compiled programs per job, frames sent once as stored (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from xpcsviewer.backends import get_backend, get_transfer_stats, reset_transfer_stats
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau import _xla as _multitau_xla
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec


def _maps(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    sq = np.clip((r / r.max() * 6).astype(int) + 1, 1, 6)
    dq = (sq + 1) // 2
    return dq, sq


def _frames(n: int, h: int, w: int, dtype=np.uint16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # a slowly varying intensity so g2 has structure at several levels
    base = rng.gamma(2.0, 1.0, (h, w))
    walk = np.cumsum(rng.normal(0, 0.05, (n, 1, 1)), axis=0)
    return rng.poisson(base * np.exp(walk)).astype(dtype)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("n_frames", [37, 300])
def test_xla_matches_numpy_reference(n_frames: int, normalize: bool) -> None:
    h, w = 19, 23  # not a whole number of tiles
    fr = _frames(n_frames, h, w)
    dq, sq = _maps(h, w)
    mask = np.ones((h, w), bool)
    mask[:2, :5] = False
    ref = correlate_multitau(fr, Partition(dq, sq, mask),
                             CorrelateSpec(normalize_frame=normalize, num_partial_g2=3),
                             options=MultitauOptions(backend=get_backend("numpy"), chunk_size=50),
                             engine="backend")
    got = correlate_multitau(fr, Partition(dq, sq, mask),
                             CorrelateSpec(normalize_frame=normalize, num_partial_g2=3),
                             options=MultitauOptions(chunk_size=50), engine="xla", device="cpu")
    assert got.config["engine"] == "xla"
    np.testing.assert_array_equal(np.isnan(got.g2), np.isnan(ref.g2))
    np.testing.assert_allclose(got.g2, ref.g2, rtol=0, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got.g2_err, ref.g2_err, rtol=0, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got.g2_static, ref.g2_static, rtol=0, atol=1e-12,
                               equal_nan=True)
    np.testing.assert_array_equal(got.g2_partial_labels, ref.g2_partial_labels)
    np.testing.assert_allclose(got.g2_partial, ref.g2_partial, atol=1e-12, equal_nan=True)


def test_xla_all_pixels_uint8_and_small_blocks() -> None:
    # every pixel valid: columns are sliced, not gathered; uint8 frames as stored
    h, w = 16, 16
    fr = _frames(130, h, w, dtype=np.uint8, seed=3)
    dq, sq = _maps(h, w)
    ref = correlate_multitau(fr, Partition(dq, sq),
                             options=MultitauOptions(backend=get_backend("numpy")),
                             engine="backend")
    from xpcsviewer.compute._binning import select_pixels

    px = select_pixels(dq, sq, None, None, None)
    c = _multitau_xla.XlaMultitau(px, 130, block=16, tile=128)
    assert not c._gather
    flat = fr.reshape(130, -1)
    for a in range(0, 130, 7):  # blocks shorter than the program's block
        c.process(flat[a:a + 7])
    g2, err, _ = c.result()
    np.testing.assert_allclose(g2, ref.g2, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(err, ref.g2_err, atol=1e-12, equal_nan=True)


def test_xla_programs_and_bytes_per_job() -> None:
    """At most 3 programs per job (zeros, step, finish) whatever the frame count, and
    the frames cross once, as stored (padding of the last block only)."""
    from xpcsviewer.backends.jax_backend import compile_counts

    h, w = 24, 24
    dq, sq = _maps(h, w)
    for n in (600, 1500):
        _multitau_xla._STEPS.clear()
        fr = _frames(n, h, w, seed=n)
        before = compile_counts()["lowered"]
        reset_transfer_stats()
        correlate_multitau(fr, Partition(dq, sq), options=MultitauOptions(chunk_size=100),
                           engine="xla", device="cpu")
        lowered = compile_counts()["lowered"] - before
        assert lowered <= 3, lowered
        sent = get_transfer_stats().host_to_device_bytes
        padded = -(-n // _multitau_xla.BLOCK) * _multitau_xla.BLOCK / n
        # frames (the last block padded) + the pixel tables (ids, bins: 32 B a pixel)
        assert fr.nbytes <= sent <= padded * fr.nbytes + 32 * 1024, (sent, fr.nbytes)


def test_xla_rejects_pixel_sink() -> None:
    fr = _frames(20, 8, 8)
    dq, sq = _maps(8, 8)
    with pytest.raises(ValueError, match="per-pixel"):
        correlate_multitau(fr, Partition(dq, sq),
                           options=MultitauOptions(pixel_sink=lambda k, p: None), engine="xla")
