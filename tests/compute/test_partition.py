"""q x phi partitions: digitize/compress semantics against a loop, invariants, helpers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xpcsviewer.compute.detector.partition import (
    PartitionGrid,
    check_consistency,
    fold_phi,
    make_partition,
)
from xpcsviewer.compute.detector.qmap import compute_qmap


def _loop_partition(values0, values1, mask, n0, n1):
    """Straightforward per-pixel reference of the partition tool's rules (linear bins)."""
    v0 = [values0[i] for i in np.ndindex(mask.shape) if mask[i]]
    v1 = [values1[i] for i in np.ndindex(mask.shape) if mask[i]]
    lo0, hi0, lo1, hi1 = min(v0), max(v0), min(v1), max(v1)
    natural = np.zeros(mask.shape, dtype=int)
    for idx in np.ndindex(mask.shape):
        if not mask[idx]:
            continue
        b0 = (
            min(int((values0[idx] - lo0) / (hi0 - lo0) * n0), n0 - 1)
            if hi0 > lo0
            else 0
        )
        b1 = (
            min(int((values1[idx] - lo1) / (hi1 - lo1) * n1), n1 - 1)
            if hi1 > lo1
            else 0
        )
        natural[idx] = b0 * n1 + b1 + 1
    present = sorted(set(natural[mask].tolist()))
    roi = np.zeros(mask.shape, dtype=int)
    for k, v in enumerate(present):
        roi[natural == v] = k + 1
    return roi, np.array(present) - 1


@pytest.mark.parametrize("dp,sp", [(1, 1), (4, 8), (3, 6)])
def test_partition_matches_loop_reference(rng, dp, sp):
    shape = (23, 31)
    q, phi = compute_qmap(shape, 9.0, 3.0, 1e-4, 10.3, 7.7)
    mask = rng.random(shape) > 0.2
    qm = make_partition(q, phi, mask, PartitionGrid(6, 18, dp, sp))
    roi, mapping = _loop_partition(q, phi, mask, 6, dp)
    # Pixels exactly on an edge could go either way in floating point; require near-total agreement.
    assert np.mean(qm.dynamic_roi_map != roi) < 0.01
    np.testing.assert_array_equal(qm.dynamic_index_mapping, mapping)
    sroi, _smap = _loop_partition(q, phi, mask, 18, sp)
    assert np.mean(qm.static_roi_map != sroi) < 0.01
    assert qm.dynamic_num_pts == (6, dp) and qm.static_num_pts == (18, sp)
    assert check_consistency(qm) == []
    assert qm.hash == qm.content_hash() and len(qm.hash) == 64


def test_centres_linear_and_log():
    q, phi = compute_qmap((40, 40), 10.0, 5.0, 75e-6, 0.0, 0.0)
    mask = q > 0
    qm = make_partition(q, phi, mask, PartitionGrid(4, 8))
    lo, hi = q[mask].min(), q[mask].max()
    e = np.linspace(lo, hi, 5)
    np.testing.assert_allclose(qm.dynamic_v_list_dim0, (e[:-1] + e[1:]) / 2, rtol=1e-13)
    ql = make_partition(q, phi, mask, PartitionGrid(4, 8, q_style="log"))
    e = np.geomspace(lo, hi, 5)
    np.testing.assert_allclose(
        ql.dynamic_v_list_dim0, np.sqrt(e[:-1] * e[1:]), rtol=1e-13
    )
    assert check_consistency(ql) == []


def test_static_count_rounded_up_to_multiple():
    q, phi = compute_qmap((30, 30), 10.0, 5.0, 75e-6, 15, 15)
    qm = make_partition(q, phi, None, PartitionGrid(4, 10, 2, 3))
    assert qm.static_num_pts == (12, 4)
    assert check_consistency(qm) == []


def test_fold_phi():
    p = np.array([-170.0, -10.0, 10.0, 100.0, 180.0])
    np.testing.assert_allclose(fold_phi(p, 20.0), [170.0, -30.0, -10.0, 80.0, 160.0])
    f2 = fold_phi(p, 0.0, 2)  # 180-degree symmetry: phi and phi+180 coincide
    np.testing.assert_allclose(f2, fold_phi(p + 180.0, 0.0, 2), atol=1e-12)
    assert (f2 >= -180).all() and (f2 < 0).all()


def test_qmap_helpers(rng):
    q, phi = compute_qmap((40, 50), 10.0, 5.0, 75e-6, 20.5, 18.5)
    qm = make_partition(q, phi, q > 0.0003, PartitionGrid(5, 20, 4, 8))
    labels = qm.dynamic_labels()
    assert len(labels) == qm.n_dynamic
    assert labels[0].startswith("q=") and "\u03c6=" in labels[0] and "deg" in labels[0]
    q0, p0 = qm.dynamic_q[3], qm.dynamic_phi[3]
    assert labels[3] == f"q={q0:.5f} \u00c5\u207b\u00b9, \u03c6={p0:.1f} deg"
    # q range: values aligned with columns
    lo, hi = np.quantile(qm.dynamic_q, [0.3, 0.7])
    cols = qm.qbins_in_range(lo, hi)
    assert (
        len(cols) == len(qm.dynamic_q[cols])
        and ((qm.dynamic_q[cols] >= lo) & (qm.dynamic_q[cols] <= hi)).all()
    )
    outside = np.setdiff1d(np.arange(qm.n_dynamic), cols)
    assert ((qm.dynamic_q[outside] < lo) | (qm.dynamic_q[outside] > hi)).all()
    assert qm.qbins_in_range(10.0, 20.0).size == 0
    # expand_static: values land at their natural grid position, the rest NaN
    vals = rng.random((3, qm.n_static))
    grid = qm.expand_static(vals)
    assert grid.shape == (3, *qm.static_num_pts)
    i0 = qm.static_index_mapping // qm.static_num_pts[1]
    i1 = qm.static_index_mapping % qm.static_num_pts[1]
    np.testing.assert_array_equal(grid[:, i0, i1], vals)
    assert np.isnan(grid).sum() == 3 * (np.prod(qm.static_num_pts) - qm.n_static)
    # static_to_dynamic agrees with a pixel loop
    s2d = qm.static_to_dynamic()
    for s in range(1, qm.n_static + 1):
        d = np.unique(qm.dynamic_roi_map[qm.static_roi_map == s])
        assert d.tolist() == [s2d[s - 1] + 1]
    one = make_partition(q, phi, None, PartitionGrid(5, 20))
    assert "\u03c6" not in one.dynamic_labels()[0]


def test_check_consistency_detects_problems():
    q, phi = compute_qmap((20, 20), 10.0, 5.0, 75e-6, 10, 10)
    qm = make_partition(q, phi, None, PartitionGrid(3, 9))
    assert check_consistency(qm) == []
    bad = make_partition(q, phi, None, PartitionGrid(3, 9))
    bad.dynamic_index_mapping = bad.dynamic_index_mapping[:-1]
    assert any("len(index_mapping)" in p for p in check_consistency(bad))
    bad = make_partition(q, phi, None, PartitionGrid(3, 9))
    bad.mask = bad.mask.copy()
    bad.mask[0, 0] = False
    assert any("mask" in p for p in check_consistency(bad))
    bad = make_partition(q, phi, None, PartitionGrid(3, 9))
    d = bad.dynamic_roi_map.copy()
    s1 = bad.static_roi_map == 1
    d[np.argwhere(s1)[0][0], np.argwhere(s1)[0][1]] = (
        d.max()
    )  # one pixel of static bin 1 moved
    bad.dynamic_roi_map = d
    assert any("span more than one" in p for p in check_consistency(bad))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    h=st.integers(3, 24),
    w=st.integers(3, 24),
    bcx=st.floats(-5, 30),
    bcy=st.floats(-5, 30),
    dq=st.integers(1, 6),
    mq=st.integers(1, 4),
    dp=st.integers(1, 4),
    mp=st.integers(1, 3),
    log=st.booleans(),
    offset=st.floats(-180, 180),
    fold=st.integers(1, 4),
    seed=st.integers(0, 2**31),
)
def test_partition_properties(h, w, bcx, bcy, dq, mq, dp, mp, log, offset, fold, seed):
    q, phi = compute_qmap((h, w), 10.0, 2.0, 1e-4, bcx, bcy)
    mask = np.random.default_rng(seed).random((h, w)) > 0.3
    mask &= q > 0  # log bins need q > 0
    if not mask.any():
        return
    qm = make_partition(q, phi, mask,
                        PartitionGrid(dq, dq * mq, dp, dp * mp, q_style="log" if log else "linear",
                                      phi_offset=offset, symmetry_fold=fold))
    assert check_consistency(qm) == []
    # Every pixel's q lies inside the dynamic bin of its column (edges between centres).
    d = qm.dynamic_roi_map.astype(int)
    n0 = qm.dynamic_num_pts[0]
    if log:
        e = np.geomspace(q[mask].min(), q[mask].max(), n0 + 1)
    else:
        e = np.linspace(q[mask].min(), q[mask].max(), n0 + 1)
    i0 = qm.dynamic_index_mapping[d[mask] - 1] // qm.dynamic_num_pts[1]
    tol = 1e-9
    assert (q[mask] >= e[i0] - tol).all() and (q[mask] <= e[i0 + 1] + tol).all()
    assert len(qm.dynamic_labels()) == qm.n_dynamic == int(d.max())
    assert len(set(qm.dynamic_index_mapping.tolist())) == qm.n_dynamic


def _reference_compress(b0, b1, n1):
    """The straightforward np.unique version of the compression."""
    combined = np.where(b0 > 0, (b0 - 1) * n1 + (b1 - 1) + 1, 0)
    uniq, inverse = np.unique(combined, return_inverse=True)
    inverse = inverse.reshape(combined.shape)
    if uniq[0] == 0:
        return inverse, uniq[1:] - 1
    return inverse + 1, uniq - 1


@pytest.mark.parametrize("style", ["linear", "log"])
@pytest.mark.parametrize("refine", [1, 7])
@pytest.mark.parametrize("block", [1 << 16, 97])
def test_fast_digitize_and_compress_equal_the_reference(rng, style, refine, block,
                                                        monkeypatch):
    import xpcsviewer.compute.detector.partition as part
    from xpcsviewer.compute.detector.partition import (
        _compress,
        _digitize_fast,
        axis_edges,
        digitize_values,
    )

    monkeypatch.setattr(part, "BLOCK_PIXELS", block)  # one block, or many (and a tail)

    q, phi = compute_qmap((61, 47), 8.0, 2.0, 1e-4, 20.2, -3.0)
    valid = rng.random(q.shape) > 0.3
    edges, _ = axis_edges(q[valid].min(), q[valid].max(), 5, style, refine)
    vals = q.copy()
    # values exactly on edges, just around them, and outside the range
    k = rng.integers(0, q.size, 200)
    vals.ravel()[k[:100]] = edges[rng.integers(0, len(edges), 100)]
    vals.ravel()[k[100:150]] = edges[rng.integers(0, len(edges), 50)] * (1 + 1e-15)
    vals.ravel()[k[150:]] = q.max() * 2
    ref = digitize_values(vals, edges, valid)
    got = _digitize_fast(vals, edges, valid, style)
    np.testing.assert_array_equal(got, ref)
    b1 = digitize_values(phi, axis_edges(-180, 180, 3, "linear", 2)[0], valid)
    roi, mapping = _compress(got, b1, 6)
    r_roi, r_map = _reference_compress(ref, b1, 6)
    np.testing.assert_array_equal(roi, r_roi)
    np.testing.assert_array_equal(mapping, r_map)


def test_one_phi_bin_partition_equals_the_folded_one(rng):
    q, phi = compute_qmap((33, 29), 10.0, 3.0, 1e-4, 12.0, 30.5)
    mask = rng.random(q.shape) > 0.2
    fast = make_partition(q, phi, mask, PartitionGrid(3, 30))  # folded range from the raw range
    # phi_offset forces the folded map
    slow = make_partition(q, phi, mask, PartitionGrid(3, 30, phi_offset=1e-30))
    for name in ("dynamic_roi_map", "static_roi_map", "static_v_list_dim1", "dynamic_v_list_dim1"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)


def test_fast_digitize_narrow_range_far_from_zero(rng):
    # a narrow range at a large offset: float32 positions would be too coarse there
    from xpcsviewer.compute.detector.partition import _digitize_fast, axis_edges, digitize_values

    v = 1.0 + 1e-3 * rng.random((50, 60))
    v.ravel()[:40] = 1.0 + 1e-3 * rng.integers(0, 501, 40) / 500
    valid = np.ones(v.shape, bool)
    edges, _ = axis_edges(v.min(), v.max(), 1, "linear", 500)
    np.testing.assert_array_equal(_digitize_fast(v, edges, valid, "linear"),
                                  digitize_values(v, edges, valid))


@pytest.mark.parametrize("kw", [{"dq_num": 1, "sq_num": 40},
                                {"dq_num": 2, "sq_num": 10, "q_style": "log"},
                                {"dq_num": 3, "sq_num": 9, "dp_num": 2, "sp_num": 4,
                                 "symmetry_fold": 2, "phi_offset": 10.0}])
def test_blockwise_passes_give_the_same_partition(kw, rng, monkeypatch):
    # validity, ranges and bins are found block by block: small blocks (and an integer
    # mask, a NaN q, the q = 0 pixel of a log axis) give the partition of one block
    import dataclasses

    import xpcsviewer.compute.detector.partition as part

    q, phi = compute_qmap((37, 41), 10.0, 3.0, 1e-4, 20.0, 18.0)
    q[0, 0] = np.nan
    mask = (rng.random(q.shape) * 3).astype(np.uint8)
    ref = make_partition(q, phi, mask, PartitionGrid(**kw))
    monkeypatch.setattr(part, "BLOCK_PIXELS", 29)
    got = make_partition(q, phi, mask, PartitionGrid(**kw))
    for f in dataclasses.fields(ref):
        a, b = getattr(got, f.name), getattr(ref, f.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f.name)
        else:
            assert a == b, f.name
    assert not got.mask[0, 0] and (kw.get("q_style") != "log" or not got.mask[18, 20])


@pytest.mark.parametrize("block", [1 << 16, 7])
def test_check_consistency_in_blocks(block, monkeypatch):
    # the same findings block by block; a negative label is reported, not an error
    import xpcsviewer.compute.detector.partition as part

    monkeypatch.setattr(part, "BLOCK_PIXELS", block)
    q, phi = compute_qmap((20, 20), 10.0, 5.0, 75e-6, 10, 10)
    qm = make_partition(q, phi, None, PartitionGrid(3, 9, 2, 4))
    assert check_consistency(qm) == []
    bad = make_partition(q, phi, None, PartitionGrid(3, 9, 2, 4))
    d = bad.dynamic_roi_map.copy()
    r, c = np.argwhere(bad.static_roi_map == 2)[-1]
    d[r, c] = 0  # the last pixel of static bin 2 leaves every dynamic bin
    bad.dynamic_roi_map = d
    found = check_consistency(bad)
    assert "1 static bins span more than one dynamic bin" in found
    assert "some static-bin pixels are outside every dynamic bin" in found
    assert any(p.startswith("dynamic: 1 pixels where") for p in found)
    neg = make_partition(q, phi, None, PartitionGrid(3, 9))
    s = neg.static_roi_map.astype(np.int32)
    s[0, 0] = -1
    neg.static_roi_map = s
    assert "static: negative values in roi_map" in check_consistency(neg)
