"""The raw statistics' one pass (compute.rawstats.accumulate): the numba kernel, its NumPy
twin and the dense path against a plain dense NumPy reference, repeated hits included."""

import importlib.util

import numpy as np
import pytest

from xpcsviewer.compute.rawstats.accumulate import (
    CAP_LEVELS,
    KMAX,
    RawStatsAccumulator,
    infer_cap,
)

needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="the compiled kernel needs numba")


def _movie(seed=3, n=60, h=9, w=11):
    rng = np.random.default_rng(seed)
    x = rng.poisson(0.3, (n, h, w))
    x[rng.random((n, h, w)) < 0.01] = 15  # at the 4-bit cap
    x[7, 2, 3] = 80  # above KMAX
    bins = (np.arange(h * w).reshape(h, w) % 3)  # 0: valid in no bin
    valid = np.ones((h, w), bool)
    valid[0, :4] = False
    return x, bins, valid


def _reference(x, bins, valid, cap):
    """The statistics of dense frames by plain loops over frames and bins."""
    n = x.shape[0]
    nb = int(bins.max())
    xf = x.astype(np.float64)
    out = {
        "photons": np.array([xf[i][valid].sum() for i in range(n)]),
        "hit_pixels": np.array([np.count_nonzero(xf[i][valid] > 0) for i in range(n)]),
        "at_cap": np.array([np.count_nonzero(xf[i][valid] == cap) for i in range(n)]),
        "bin_photons": np.array([[xf[i][valid & (bins == b)].sum() for b in range(1, nb + 1)]
                                 for i in range(n)]),
        "pixel_sum": xf.sum(axis=0),
        "pixel_max": xf.max(axis=0),
        "pixel_cap_frames": (xf == cap).sum(axis=0),
    }
    hist = np.zeros((nb, KMAX + 2), np.int64)
    for b in range(1, nb + 1):
        vals = np.minimum(xf[:, valid & (bins == b)].astype(np.int64), KMAX + 1).ravel()
        hist[b - 1] = np.bincount(vals, minlength=KMAX + 2)
    out["count_hist"] = hist
    return out


def _hits(x, repeat=False, rng=None):
    n = x.shape[0]
    flat = x.reshape(n, -1)
    f, p = np.nonzero(flat)
    v = flat[f, p]
    if not repeat:
        return f, p, v
    # split each count into single photons, shuffled within its frame (event lists)
    f2, p2 = np.repeat(f, v), np.repeat(p, v)
    order = np.lexsort((rng.random(f2.size), f2))
    return f2[order], p2[order], np.ones(f2.size, np.uint8)


def _check(stats, ref):
    for name, want in ref.items():
        got = getattr(stats, name)
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("engine", [pytest.param("compiled", marks=needs_numba), "array"])
@pytest.mark.parametrize("repeat", [False, True])
def test_hits_pass_equals_the_dense_reference(engine, repeat):
    x, bins, valid = _movie()
    f, p, v = _hits(x, repeat, np.random.default_rng(0))
    acc = RawStatsAccumulator(x.shape[1:], x.shape[0], valid=valid, bins=bins, engine=engine)
    # blocks of whole frames, as the readers give them
    cut = np.searchsorted(f, [20, 41])
    for a, b in zip([0, *cut], [*cut, f.size], strict=True):
        acc.add_hits(f[a:b].astype(np.int32), p[a:b], v[a:b].astype(np.uint16))
    assert infer_cap(acc.max_count) == 255  # 80 counts: the 8-bit mode
    stats = acc.finish(15)
    _check(stats, _reference(x, bins, valid, 15))
    assert stats.n_valid == valid.sum()


@needs_numba
def test_kernel_equals_numpy_twin_candidates_included():
    x, bins, valid = _movie(seed=5)
    x[30, 4:6, 4:7] = 12  # a bright cluster
    f, p, v = _hits(x, True, np.random.default_rng(1))
    res = []
    for engine in ("compiled", "array"):
        acc = RawStatsAccumulator(x.shape[1:], x.shape[0], valid=valid, bins=bins,
                                  engine=engine)
        acc.add_hits(f, p, v)
        res.append(acc.finish(None))
    a, b = res
    for i in range(3):
        np.testing.assert_array_equal(a.candidates[i], b.candidates[i])
    assert {(30, r * 11 + c) for r in (4, 5) for c in (4, 5, 6)} <= set(
        zip(a.candidates[0].tolist(), a.candidates[1].tolist(), strict=True))
    np.testing.assert_array_equal(a.bin_photons, b.bin_photons)


@pytest.mark.parametrize("engine", ["compiled", "array"])
def test_dense_chunks_equal_the_reference_and_the_hits(engine):
    """Unsigned counts: the compiled engine passes the lit pixels to the hits' kernel,
    the array engine takes the NumPy passes over whole frames."""
    if engine == "compiled":
        pytest.importorskip("numba")
    x, bins, valid = _movie(seed=8)
    acc = RawStatsAccumulator(x.shape[1:], x.shape[0], valid=valid, bins=bins, caps=(15,),
                              engine=engine)
    for a in range(0, x.shape[0], 7):
        acc.add_frames(a, x[a:a + 7].astype(np.uint16))
    dense = acc.finish(15)
    _check(dense, _reference(x, bins, valid, 15))
    acc2 = RawStatsAccumulator(x.shape[1:], x.shape[0], valid=valid, bins=bins,
                               engine="array")
    acc2.add_hits(*_hits(x))
    sparse = acc2.finish(15)
    for i in range(3):  # the same cosmic candidates from frames as from hits
        np.testing.assert_array_equal(dense.candidates[i], sparse.candidates[i])


def test_infer_cap_and_no_qmap():
    assert [infer_cap(m) for m in (0, 1, 3, 4, 200, 4095, 4096)] == [
        None, 3, 3, 15, 255, 4095, None]
    assert CAP_LEVELS == (3, 15, 255, 4095)
    x, _, _ = _movie()
    acc = RawStatsAccumulator(x.shape[1:], x.shape[0], engine="array")
    acc.add_hits(*_hits(x))
    st = acc.finish(None)
    assert st.bin_photons is None and st.count_hist is None
    np.testing.assert_array_equal(st.photons, x.reshape(x.shape[0], -1).sum(axis=1))
    assert not st.at_cap.any() and not st.pixel_cap_frames.any()
    with pytest.raises(ValueError, match="not one of the caps"):
        acc.finish(7)
