"""q and phi maps: exact formula, conventions, real-file reproduction."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid, check_consistency, make_partition
from xpcsviewer.compute.detector.qmap import compute_qmap, wavelength_angstrom


def test_q_matches_scalar_formula_per_pixel():
    shape, e, dist, pix, bcx, bcy = (7, 9), 10.0, 4.0, 75e-6, 3.3, 2.1
    q, phi = compute_qmap(shape, e, dist, pix, bcx, bcy)
    lam = 12.398419843320026 / e
    for row in range(shape[0]):
        for col in range(shape[1]):
            r = math.hypot((row - bcy) * pix, (col - bcx) * pix)
            # Bragg form: q = 4 pi sin(theta) / lambda with 2 theta = atan(r / L)
            ref = 4 * math.pi * math.sin(math.atan2(r, dist) / 2) / lam
            assert q[row, col] == pytest.approx(ref, rel=1e-13, abs=1e-16)
            ref_phi = math.degrees(math.atan2(-(row - bcy), col - bcx))
            assert phi[row, col] == pytest.approx(ref_phi, abs=1e-12)


def test_phi_convention_y_up_and_range():
    q, phi = compute_qmap((5, 5), 12.0, 5.0, 1e-4, 2.0, 2.0)
    assert q[2, 2] == 0.0
    assert phi[2, 4] == pytest.approx(0.0)  # right of the beam
    assert phi[0, 2] == pytest.approx(90.0)  # above (smaller row): y points up
    assert phi[4, 2] == pytest.approx(-90.0)
    assert phi[2, 0] == pytest.approx(180.0)  # (-180, 180]
    assert (phi > -180).all() and (phi <= 180).all()


def test_wavelength_and_bad_input():
    assert wavelength_angstrom(12.398419843320026) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        compute_qmap((4, 4), 0.0, 1.0, 1e-4, 0, 0)
    with pytest.raises(ValueError):
        compute_qmap((4, 4), 10.0, -1.0, 1e-4, 0, 0)


def test_real_files_partition_reproduced(real_data_dir):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*.hdf"))
    assert files
    for fn in files[:: max(1, len(files) // 3)]:
        with h5py.File(fn, "r") as f:
            g = f["xpcs/qmap"]
            mask = g["mask"][()]
            q, phi = compute_qmap(
                mask.shape,
                g["energy"][()],
                g["detector_distance"][()],
                g["pixel_size"][()],
                g["beam_center_x"][()],
                g["beam_center_y"][()],
            )
            dn, sn = g["dynamic_num_pts"][()], g["static_num_pts"][()]
            qm = make_partition(q, phi, mask, PartitionGrid(dn[0], sn[0], dn[1], sn[1]))
            assert np.mean(qm.dynamic_roi_map != g["dynamic_roi_map"][()]) < 1e-4
            assert np.mean(qm.static_roi_map != g["static_roi_map"][()]) < 1e-3
            np.testing.assert_allclose(
                qm.dynamic_v_list_dim0, g["dynamic_v_list_dim0"][()], atol=2e-7
            )
            np.testing.assert_allclose(
                qm.static_v_list_dim0, g["static_v_list_dim0"][()], atol=2e-7
            )
            np.testing.assert_allclose(
                qm.static_v_list_dim1, g["static_v_list_dim1"][()], atol=1e-9
            )
            np.testing.assert_array_equal(
                qm.dynamic_index_mapping, g["dynamic_index_mapping"][()]
            )
            assert check_consistency(qm) == []


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 16])
def test_row_blocks_give_the_same_maps(block, monkeypatch):
    # the maps are made in row blocks of ~BLOCK_PIXELS pixels: any block size gives the
    # same values, bit for bit, as one block (and the scalar formula above)
    import xpcsviewer.compute.detector.qmap as qmod

    args = ((23, 17), 9.0, 3.0, 1e-4, 6.4, 11.5)
    ref = qmod.compute_qmap(*args)
    monkeypatch.setattr(qmod, "BLOCK_PIXELS", block)
    q, phi = qmod.compute_qmap(*args)
    np.testing.assert_array_equal(q, ref[0])
    np.testing.assert_array_equal(phi, ref[1])
    assert q.flags.c_contiguous and phi.flags.c_contiguous
