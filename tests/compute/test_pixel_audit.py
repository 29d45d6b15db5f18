"""The pixel audit (issue 36): drop-one leverage against a brute-force recomputation,
robust per-bin statistics against NumPy's median, hot and repeat flags, the table."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.detector.pixel_audit import (
    TABLE_HEADER,
    AuditOptions,
    audit_pixels,
    audit_summary,
    audit_table_rows,
    group_median_mad,
    ranked,
    with_repeats,
)
from xpcsviewer.model.result import QMap


def _qmap(dq: np.ndarray, sq: np.ndarray, mask: np.ndarray) -> QMap:
    nd, ns = int(dq.max()), int(sq.max())
    return QMap(
        dynamic_roi_map=dq, static_roi_map=sq, mask=mask,
        dynamic_v_list_dim0=np.linspace(0.001, 0.01, nd), dynamic_v_list_dim1=np.zeros(1),
        static_v_list_dim0=np.linspace(0.001, 0.01, ns), static_v_list_dim1=np.zeros(1),
        dynamic_index_mapping=np.arange(nd), static_index_mapping=np.arange(ns),
        dynamic_num_pts=(nd, 1), static_num_pts=(ns, 1))


def _bin_g2(G2, IP, IF, dq, sq, keep):
    """The correlator's bin g2 of one delay, from scratch, with only ``keep`` pixels."""
    nd = int(dq.max())
    out = np.full(nd, np.nan)
    for d in range(1, nd + 1):
        gs = []
        for s in sorted(set(sq[(dq == d) & keep].tolist())):
            sel = (sq == s) & keep
            den = IP[sel].sum() * IF[sel].sum()
            gs.append(sel.sum() * G2[sel].sum() / (den if den != 0 else 1e8))
        if gs:
            out[d - 1] = np.mean(gs)
    return out


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(7)
    h, w, t = 9, 11, 5
    dq = np.repeat(np.arange(1, 4), 33).reshape(h, w)  # 3 dynamic bins of 33 pixels
    sq = (dq - 1) * 4 + 1 + (np.arange(h * w).reshape(h, w) % 4)  # 4 static per dynamic
    sq[0, 0] = 13  # a static bin of one pixel (its own) inside dynamic bin 1
    mask = np.ones((h, w), bool)
    mask[4, 3:6] = False
    stack = np.empty((t, 3, h, w))
    mean = rng.uniform(0.8, 1.2, (h, w))
    stack[:, 1] = mean * rng.uniform(0.95, 1.05, (t, h, w))
    stack[:, 2] = mean * rng.uniform(0.95, 1.05, (t, h, w))
    stack[:, 0] = stack[:, 1] * stack[:, 2] * (1.2 + 0.1 * rng.standard_normal((t, h, w)))
    stack[:, 1:, 2, 7] *= 6.0  # a bright pixel
    stack[:, 0, 2, 7] *= 36.0
    return _qmap(dq, sq, mask), stack


def test_leverage_equals_brute_force_drop_one(small):
    qm, stack = small
    au = audit_pixels(stack, qm, options=AuditOptions(keep_curves=True))
    valid = qm.mask & (qm.dynamic_roi_map > 0)
    assert au.pixel_index.size == valid.sum()
    for k in range(stack.shape[0]):
        G2, IP, IF = stack[k]
        full = _bin_g2(G2, IP, IF, qm.dynamic_roi_map, qm.static_roi_map, valid)
        np.testing.assert_allclose(au.g2[k], full, rtol=0, atol=1e-13)
        for i, flat in enumerate(au.pixel_index):
            keep = valid.copy()
            keep.flat[flat] = False
            d = au.dynamic_id[i]
            drop = _bin_g2(G2, IP, IF, qm.dynamic_roi_map, qm.static_roi_map, keep)[d]
            assert au.delta[k, i] == pytest.approx(full[d] - drop, abs=1e-12)
    # the scalar summary is the largest |delta| / bin error over the delays, the
    # error floored at the plateau delays' smallest after them
    sig = au.g2_err[:, au.dynamic_id].copy()
    sig[3:] = np.maximum(sig[3:], sig[:3].min(axis=0))
    np.testing.assert_allclose(au.leverage, np.max(np.abs(au.delta) / sig, axis=0),
                               rtol=1e-6)


def test_reader_and_array_agree(small):
    qm, stack = small
    a = audit_pixels(stack, qm)
    b = audit_pixels(lambda k: tuple(stack[k]), qm, n_delays=stack.shape[0])
    np.testing.assert_array_equal(a.leverage, b.leverage)
    np.testing.assert_array_equal(a.z_intensity, b.z_intensity)


def test_bright_pixel_is_hot_and_ranks_first(small):
    qm, stack = small
    au = audit_pixels(stack, qm)
    top = ranked(au, 1)[0]
    assert (au.rows[top], au.cols[top]) == (2, 7)
    assert au.hot[top] and au.z_intensity[top] > 6
    assert au.hot.sum() == 1
    m = au.flagged_mask(top=1)
    assert m[2, 7] and m.sum() == 1


def test_group_median_mad_against_numpy():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(500)
    g = rng.integers(0, 7, 500)
    v[3] = np.nan
    med, mad = group_median_mad(v, g, 8)
    for j in range(7):
        x = v[(g == j) & np.isfinite(v)]
        assert med[j] == pytest.approx(np.median(x), abs=1e-15)
        assert mad[j] == pytest.approx(np.median(np.abs(x - np.median(x))), abs=1e-15)
    assert np.isnan(med[7]) and np.isnan(mad[7])


def test_repeats_flag_a_transient_pixel(small):
    qm, stack = small
    rng = np.random.default_rng(3)
    audits = []
    for f in range(4):
        s = stack * rng.uniform(0.98, 1.02, stack.shape)
        if f == 2:
            s[:, 1:, 6, 1] *= 1.6  # brighter in one repeat only
            s[:, 0, 6, 1] *= 1.6 ** 2
        audits.append(audit_pixels(s, qm, options=AuditOptions(label=f"r{f}")))
    out = with_repeats(audits)
    i = int(np.flatnonzero(out[2].pixel_index == 6 * qm.shape[1] + 1)[0])
    assert out[2].z_repeat[i] > 6 and out[2].hot[i]
    assert not np.isnan(out[0].z_repeat).all()
    assert all(np.nan_to_num(o.z_repeat[i]) < 6 for j, o in enumerate(out) if j != 2)
    # the bright pixel is bright in every repeat: the repeats do not call it hot
    j = int(np.flatnonzero(out[0].pixel_index == 2 * qm.shape[1] + 7)[0])
    assert out[0].z_repeat[j] < 6


def test_table_rows(small):
    qm, stack = small
    au = audit_pixels(stack, qm, options=AuditOptions(label="A.hdf"))
    rows = audit_table_rows(au, top=5)
    assert rows[0] == TABLE_HEADER and len(rows) == 6
    assert rows[1][:4] == ["A.hdf", 1, 2, 7] and "intensity above" in rows[1][7]
    levs = [r[5] for r in rows[1:]]
    assert levs == sorted(levs, reverse=True)
    assert len(audit_table_rows(au, flagged_only=True)) - 1 == au.flagged.sum()


def test_bad_stack_is_refused(small):
    qm, stack = small
    bad = stack.copy()
    bad[2, 1, 3, 3] = np.nan
    with pytest.raises(ValueError, match="non-finite IP at delay index 2"):
        audit_pixels(bad, qm)
    with pytest.raises(ValueError, match="expected"):
        audit_pixels(stack[:, :2], qm)


def test_summary_for_the_report(small):
    qm, stack = small
    au = audit_pixels(stack, qm, options=AuditOptions(label="A.hdf"))
    s = audit_summary(au)
    assert s["file"] == "A.hdf" and s["pixels"] == au.pixel_index.size
    assert s["flagged"] == au.flagged.sum() >= 1 and s["hot"] == 1
    assert s["bins_flagged"] == sorted(set((au.dynamic_id[au.flagged] + 1).tolist()))
    assert s["max_leverage"] == pytest.approx(np.nanmax(au.leverage))
    assert s["rows"][0] == TABLE_HEADER and s["rows"][1][2:4] == [2, 7]
    assert len(s["rows"]) == 1 + min(10, s["flagged"])


def test_a_bins_only_pixel_has_no_leverage(small):
    qm, stack = small
    dq, sq = qm.dynamic_roi_map.copy(), qm.static_roi_map.copy()
    dq[8, 10], sq[8, 10] = 4, 14  # a dynamic bin of one pixel
    lone = _qmap(dq, sq, qm.mask)
    au = audit_pixels(stack, lone)
    i = int(np.flatnonzero(au.pixel_index == 8 * 11 + 10)[0])
    assert np.isnan(au.leverage[i]) and ranked(au)[-1] == i
    assert np.isfinite(np.delete(au.leverage, i)).all()
    row = next(r for r in audit_table_rows(au)[1:] if r[2:4] == [8, 10])
    assert row[5] is None and "only pixel of its bin" in row[7]
