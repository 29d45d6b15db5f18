"""The findings' JSON contract (issue 45) and the derived timelines of RawInspection."""

import json

import numpy as np

from xpcsviewer.model.raw_inspect import FINDING_KINDS, Finding, RawInspection


def _inspection(findings):
    n = 4
    return RawInspection(
        path="x.bin",
        layout="rigaku_bin",
        detector_shape=(2, 3),
        n_frames=n,
        frame_time=0.5,
        counter_cap=15,
        photons=np.array([1.0, 0.0, 4.0, 2.0]),
        hit_pixels=np.array([1, 0, 2, 2]),
        at_cap=np.array([0, 0, 1, 0]),
        n_valid=5,
        bin_photons=None,
        pixel_sum=np.arange(6, dtype=np.float64).reshape(2, 3),
        pixel_max=np.zeros((2, 3)),
        pixel_cap_frames=np.zeros((2, 3), np.int32),
        count_hist=None,
        findings=findings,
    )


def test_finding_as_dict_has_the_contract_keys_and_plain_types():
    f = Finding(
        "hot_pixel",
        (np.int64(0), np.int64(9)),
        ((np.int64(1), 2),),
        None,
        "mean 4 vs 0.1",
        np.int32(3),
        7.5,
    )
    d = f.as_dict()
    assert set(d) == {"kind", "frames", "pixels", "frequency_hz", "detail", "q_bin"}
    assert d == {
        "kind": "hot_pixel",
        "frames": [0, 9],
        "pixels": [[1, 2]],
        "frequency_hz": None,
        "detail": "mean 4 vs 0.1",
        "q_bin": 3,
    }
    assert json.loads(json.dumps(d)) == d  # plain types only (no numpy scalars)
    m = Finding("modulation", (0, 99), frequency_hz=np.float64(12.5)).as_dict()
    assert m["pixels"] == [] and m["frequency_hz"] == 12.5 and m["q_bin"] is None


def test_findings_json_and_properties():
    cosmic = Finding("cosmic", (2, 2), ((0, 0), (0, 1), (1, 1)))
    ins = _inspection([cosmic, Finding("empty_frames", (1, 1))])
    doc = ins.findings_json()
    assert list(doc) == ["findings"]
    assert [f["kind"] for f in doc["findings"]] == ["cosmic", "empty_frames"]
    assert all(f["kind"] in FINDING_KINDS for f in doc["findings"])
    assert json.loads(json.dumps(doc)) == doc
    np.testing.assert_allclose(ins.occupancy, [0.2, 0.0, 0.4, 0.4])
    np.testing.assert_allclose(ins.cap_fraction, [0.0, 0.0, 0.5, 0.0])
    np.testing.assert_allclose(ins.flux, np.arange(6).reshape(2, 3) / 2.0)
    np.testing.assert_allclose(ins.mean_image, np.arange(6).reshape(2, 3) / 4.0)
    ins.frame_time = None
    assert ins.flux is None
