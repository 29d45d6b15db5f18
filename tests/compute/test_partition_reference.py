"""Partitions against an independent NumPy implementation of the standard tool's rules.

The reference below is written from result-file-format.md §4 (pySimpleMask's
``generate_partition`` / ``combine_partitions``), axis by axis and with ``np.unique``
for the compression, without any code of ``xpcsviewer.compute.detector.partition``: edges over
the valid pixels (linear, or logarithmic over q > 0), values and edges rounded to 12
decimals before ``digitize``, the maximum-value pixels in the last bin, stray zeros in
bin 1, phi offset (subtracted, wrapped into (-180, 180]) and n-fold symmetry (phi + 180
modulo 360/n) with bin labels = mean azimuth of the bin's pixels in the first fold, the
combined index (b0 - 1) n1 + b1 compressed by ``np.unique``, and the index mapping of
each compressed bin. Static bins are computed independently from their own count.
"""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import (
    PartitionGrid,
    check_consistency,
    make_partition,
    restrict_partition,
)
from xpcsviewer.compute.detector.qmap import DetectorGeometry, compute_qmap


def ref_axis(values, valid, n, style="linear"):
    """1-based bins (0 outside ``valid``), edges and centres of one axis."""
    v = values[valid]
    lo, hi = v.min(), v.max()
    if style == "log":
        edges = np.logspace(np.log10(lo), np.log10(hi), n + 1)
        centres = np.sqrt(edges[1:] * edges[:-1])
    else:
        edges = np.linspace(lo, hi, n + 1)
        centres = (edges[1:] + edges[:-1]) / 2.0
    b = np.digitize(np.round(values, 12), np.round(edges, 12))
    b[b > n] = 0
    b[(values == hi) & valid] = n  # the maximum goes to the last bin
    b[valid & (b == 0)] = 1  # stray zeros inside the mask
    b[~valid] = 0
    return b, edges, centres


def ref_phi(phi, offset, fold):
    """phi - offset wrapped into (-180, 180] (via the complex angle), then folded."""
    p = np.rad2deg(np.angle(np.exp(1j * np.deg2rad(phi - offset))))
    if fold > 1:
        return p, np.mod(p + 180.0, 360.0 / fold)
    return p, p


def ref_partition(q, phi, mask, n0, n1, style="linear", offset=0.0, fold=1):
    valid = mask.copy()
    if style == "log":
        valid &= q > 0
    b0, _, c0 = ref_axis(q, valid, n0, style)
    p_unwrapped, p = ref_phi(phi, offset, fold)
    b1, _, c1 = ref_axis(p, valid, n1)
    if fold > 1:
        first = (p_unwrapped >= 0) & (p_unwrapped < 360.0 / fold)
        for k in range(n1):
            sel = first & (b1 == k + 1)
            if sel.any():
                c1[k] = phi[sel].mean()
    natural = np.where(valid, (b0 - 1) * n1 + (b1 - 1) + 1, 0)
    uniq, inverse = np.unique(natural, return_inverse=True)
    roi = inverse.reshape(natural.shape)
    if natural.min() > 0:  # no excluded pixel: compressed values start at 1
        roi = roi + 1
    return roi, uniq[uniq >= 1] - 1, c0, c1, valid


def check(qm, q, phi, mask, dq, sq, dp, sp, **kw):
    for kind, n0, n1 in (("dynamic", dq, dp), ("static", sq, sp)):
        roi, mapping, c0, c1, valid = ref_partition(q, phi, mask, n0, n1, **kw)
        np.testing.assert_array_equal(getattr(qm, f"{kind}_roi_map"), roi, err_msg=kind)
        np.testing.assert_array_equal(getattr(qm, f"{kind}_index_mapping"), mapping)
        np.testing.assert_allclose(getattr(qm, f"{kind}_v_list_dim0"), c0, rtol=1e-12)
        np.testing.assert_allclose(getattr(qm, f"{kind}_v_list_dim1"), c1, rtol=1e-12,
                                   atol=1e-9)
        assert tuple(getattr(qm, f"{kind}_num_pts")) == (n0, n1)
    np.testing.assert_array_equal(qm.mask, valid)
    assert check_consistency(qm) == []
    return roi


GEOMETRY = {"energy_kev": 10.0, "det_dist_m": 5.0, "pixel_size_m": 150e-6}


def _maps(shape=(61, 73), bcx=30.0, bcy=20.0):
    q, phi = compute_qmap(shape, bcx=bcx, bcy=bcy, **GEOMETRY)
    return q, phi


@pytest.mark.parametrize(
    "dq,sq,dp,sp,kw",
    [
        (6, 24, 1, 1, {}),  # q only, linear
        (5, 20, 1, 1, {"style": "log"}),  # log q, beam centre on a pixel (q = 0 there)
        (1, 1, 8, 16, {"offset": 30.0}),  # phi only, with an offset
        (4, 12, 6, 12, {"offset": -45.0, "fold": 2}),  # q x phi, two-fold symmetry
        (3, 9, 4, 8, {"offset": 10.0, "fold": 4}),  # q x phi, four-fold symmetry
        (4, 8, 3, 9, {"style": "log", "fold": 3}),  # log q x folded phi, odd fold
    ],
)
def test_partition_equals_reference(dq, sq, dp, sp, kw):
    q, phi = _maps()
    rng = np.random.default_rng(3)
    mask = rng.random(q.shape) > 0.1
    mask[:5, :] = False  # a masked band
    # the largest q of the detector is masked: the range comes from valid pixels only
    far = np.unravel_index(np.argmax(q), q.shape)
    mask[far] = False
    style = kw.get("style", "linear")
    qm = make_partition(q, phi, mask,
                        PartitionGrid(dq, sq, dp, sp, q_style=style,
                                      phi_offset=kw.get("offset", 0.0),
                                      symmetry_fold=kw.get("fold", 1)))
    check(qm, q, phi, mask, dq, sq, dp, sp, **kw)
    # masked pixels are excluded everywhere; the beam-centre pixel on a log axis too
    assert (qm.dynamic_roi_map[~mask] == 0).all() and (qm.static_roi_map[~mask] == 0).all()
    if style == "log":
        assert qm.dynamic_roi_map[20, 30] == 0 and q[20, 30] == 0
    # the valid pixel with the largest q is in the last q bin
    qv = np.where(qm.mask, q, -1)
    top = np.unravel_index(np.argmax(qv), q.shape)
    nat = qm.dynamic_index_mapping[qm.dynamic_roi_map[top] - 1]
    assert nat // dp == dq - 1


def test_compression_skips_empty_bins_and_maps_back():
    q, phi = _maps()
    mask = np.ones(q.shape, bool)
    mask[:, :30] = False  # the left half: the phi sectors there are empty
    qm = make_partition(q, phi, mask, PartitionGrid(4, 8, 8, 8))
    roi = check(qm, q, phi, mask, 4, 8, 8, 8)
    assert qm.n_static < 8 * 8 and roi.max() == qm.n_static
    # lookup of a compressed value: natural index -> (q, phi) centre of the pixel's bins
    for v in range(1, qm.n_dynamic + 1):
        nat = int(qm.dynamic_index_mapping[v - 1])
        i0, i1 = divmod(nat, 8)
        pix = qm.dynamic_roi_map == v
        assert pix.any()
        assert qm.dynamic_q[v - 1] == qm.dynamic_v_list_dim0[i0]
        assert qm.dynamic_phi[v - 1] == qm.dynamic_v_list_dim1[i1]


def test_no_excluded_pixel_starts_at_one():
    q, phi = _maps((20, 24), bcx=-5.0, bcy=-5.0)
    qm = make_partition(q, phi, None, PartitionGrid(3, 6, 2, 4))
    check(qm, q, phi, np.ones(q.shape, bool), 3, 6, 2, 4)
    assert qm.dynamic_roi_map.min() == 1


def test_restrict_partition_keeps_bins_and_renumbers():
    q, phi = _maps()
    qm = make_partition(q, phi, None, PartitionGrid(5, 20, 4, 8))
    keep = np.ones(q.shape, bool)
    keep[phi > 100] = False  # empties some sectors
    r = restrict_partition(qm, keep)
    assert check_consistency(r) == []
    # every kept pixel keeps its natural bin (same q and phi centres)
    nat_old = np.asarray(qm.dynamic_index_mapping)[qm.dynamic_roi_map.astype(int) - 1]
    nat_new = np.asarray(r.dynamic_index_mapping)[r.dynamic_roi_map.astype(int) - 1]
    np.testing.assert_array_equal(nat_new[keep], nat_old[keep])
    assert (r.dynamic_roi_map[~keep] == 0).all() and not r.mask[~keep].any()
    np.testing.assert_array_equal(r.dynamic_v_list_dim0, qm.dynamic_v_list_dim0)
    # renumbered 1..N in natural order
    assert np.all(np.diff(r.dynamic_index_mapping.astype(int)) > 0)
    assert r.dynamic_roi_map.max() == r.n_dynamic < qm.n_dynamic
    with pytest.raises(ValueError, match="no pixel"):
        restrict_partition(qm, np.zeros(q.shape, bool))


def test_written_qmap_file_reads_back(tmp_path):
    """The partition editor's file (pySimpleMask's /qmap layout) read by our reader."""
    import h5py

    from xpcsviewer.io import read_qmap
    from xpcsviewer.io.results.writer import write_qmap_file

    q, phi = _maps()
    qm = make_partition(q, phi, q > 0.001,
                        PartitionGrid(4, 12, 6, 12, q_style="log", phi_offset=15.0,
                                      symmetry_fold=2),
                        DetectorGeometry(beam_center_x=30.0, beam_center_y=20.0,
                                         detector_distance=5.0, pixel_size=150e-6,
                                         energy_kev=10.0))
    path = write_qmap_file(tmp_path / "q.hdf", qm)
    back = read_qmap(path)
    for name in ("dynamic_roi_map", "static_roi_map", "mask", "dynamic_index_mapping",
                 "static_index_mapping", "dynamic_v_list_dim0", "dynamic_v_list_dim1",
                 "static_v_list_dim0", "static_v_list_dim1"):
        np.testing.assert_array_equal(getattr(back, name), getattr(qm, name), err_msg=name)
    assert back.hash == qm.hash == qm.content_hash()
    assert back.dynamic_num_pts == (4, 6) and back.energy_kev == 10.0
    with h5py.File(path, "r") as f:
        g = f["qmap"]
        assert set(g) >= {"beam_center_x", "beam_center_y", "pixel_size", "mask", "blemish",
                          "energy", "detector_distance", "map_names", "map_units",
                          "source_file", *(f"{k}_{n}" for k in ("dynamic", "static")
                                            for n in ("num_pts", "roi_map", "v_list_dim0",
                                                      "v_list_dim1", "index_mapping"))}
        assert g.attrs["hash"] == qm.hash and g["dynamic_roi_map"].dtype == np.uint8
        assert g["dynamic_v_list_dim1"].attrs["name"] == "phi"
