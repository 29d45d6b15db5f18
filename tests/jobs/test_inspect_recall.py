"""The fault finder finds every planted fault (issue 45: 100 % recall, the modulation's
frequency within 0.2 Hz) in every layout ``open_raw_source`` reads, and raises no false
alarm on the same acquisitions without faults.

Each acquisition is a small one of the demo's generator
(:func:`xpcsviewer.synthetic.raw_sim.write_acquisition`: Brownian speckle, faults planted
by :mod:`xpcsviewer.synthetic.faults`), inspected as a user would
(:func:`xpcsviewer.jobs.inspect.inspect_source` with its q-map, the frame time where the
file states none, the bin time of a Timepix list, the counter's cap left to the source),
and the findings are matched against the truth
(:func:`~xpcsviewer.synthetic.faults.match_findings`).
"""

from __future__ import annotations

import copy

import pytest

from xpcsviewer.synthetic.faults import match_findings
from xpcsviewer.synthetic.raw_sim import write_acquisition

inspect = pytest.importorskip("xpcsviewer.jobs.inspect")

FT = 0.01  # 100 frames/s: a 37 Hz modulation below Nyquist
N = 1000   # 10 s: 0.1 Hz frequency bins
_WATER = {"model": "brownian", "temperature_k": 298.15, "radius_m": 100e-9,
          "contrast": 0.25}


def _geometry(shape, bcx, bcy, pixel=75e-6):
    return {"shape": shape, "energy_kev": 10.0, "det_dist_m": 5.0, "pixel_size_m": pixel,
            "bcx": bcx, "bcy": bcy}


# (geometry, region, extra acquisition keys) per layout; the beam at the region's centre
_DETECTORS = {
    "hdf5": (_geometry((48, 48), 24.0, 24.0), (8, 8), {}),
    "npy": (_geometry((48, 48), 24.0, 24.0), (8, 8), {}),
    "rigaku": (_geometry((512, 1024), 512.0, 256.0, 76e-6), (240, 496), {}),
    "rigaku-3m": (_geometry((1676, 2100), 600.0, 300.0, 76e-6), (284, 584), {}),
    "esrf-csr": (_geometry((64, 64), 32.0, 32.0), (16, 16), {"frames_per_block": 400}),
    "id11-sparse": (_geometry((48, 48), 24.0, 24.0), (8, 8), {}),
    "timepix": (_geometry((48, 48), 24.0, 24.0, 55e-6), (8, 8), {"tick_s": 1e-6}),
}


def _faults(layout, r0, c0, kinds, cap=None):
    """Faults at offsets from the region's corner (a 32 x 32 region, beam at its centre:
    valid pixels 3 < r <= 15 from it; the modulated q-bin 2 is r ~ 6-9, kept free)."""
    at = lambda r, c: [r0 + r, c0 + c]  # noqa: E731
    hot = 3 if cap == 3 else 400
    f = {
        "hot_pixels": [{"row": r0 + 5, "col": c0 + 16, "rate": 1.0 if cap != 3 else 0.8}],
        "dead_pixels": [at(16, 28), at(27, 14)],
        "cosmics": [{"frame": 123, "pixels": [at(4, 12), at(4, 13), at(5, 13)],
                     "counts": min(hot, 25)},
                    {"frame": 777, "pixels": [at(26, 20), at(27, 20), at(27, 21), at(28, 21),
                                              at(28, 22)], "counts": min(hot, 25)}],
        "empty_frames": [[500, 529]],
        "modulation": {"q_bin": 2, "frequency_hz": 37.0, "amplitude": 0.5},
        "at_cap": [{"pixels": [at(20, 4), at(21, 4)], "frames": [200, 399],
                    "rate": 10.0 * (cap or 1)}],
    }
    out = {k: v for k, v in f.items() if k in kinds}
    if cap is not None:
        out["cap"] = cap
    return out


def _spec(layout, kinds, cap=None, name=None):
    geo, (r0, c0), extra = _DETECTORS[layout]
    return {
        "name": name or f"t_{layout.replace('-', '_')}",
        "layout": layout,
        "geometry": geo,
        "roi": {"row": r0, "col": c0, "rows": 32, "cols": 32},
        "beamstop_px": 3,
        "partition": {"dq_num": 4, "sq_num": 8, "r_max_px": 15},
        "acquisition": {"frame_time": FT, "n_frames": N, "rate": 0.05, "background": 0.3,
                        "speckle_px": 2, **extra},
        "sample": _WATER,
        "faults": _faults(layout, r0, c0, kinds, cap),
    }


ALL = ("hot_pixels", "dead_pixels", "cosmics", "empty_frames", "modulation", "at_cap")
CASES = {
    "hdf5": (ALL, 255),
    "npy": (("hot_pixels", "dead_pixels", "cosmics", "empty_frames"), None),
    "rigaku": (ALL, 3),  # the 2-bit mode
    "rigaku-3m": (("hot_pixels", "dead_pixels", "cosmics", "empty_frames", "at_cap"), 15),
    "esrf-csr": (("hot_pixels", "dead_pixels", "modulation", "at_cap"), 4095),
    "id11-sparse": (("hot_pixels", "dead_pixels", "cosmics", "empty_frames", "modulation"),
                    None),
    "timepix": (("hot_pixels", "dead_pixels", "cosmics", "empty_frames", "modulation"), None),
}


def _inspect(acq):
    ins = inspect.inspect_source(acq.files[0], qmap=acq.qmap_path, frame_time=acq.frame_time,
                                 bin_time=acq.bin_time)
    return ins, [f.as_dict() for f in ins.findings]


@pytest.mark.parametrize("layout", list(CASES))
def test_every_planted_fault_is_found(tmp_path, layout):
    kinds, cap = CASES[layout]
    acq = write_acquisition(tmp_path, _spec(layout, kinds, cap), seed=7)
    assert len(acq.faults) >= len(kinds)
    ins, found = _inspect(acq)
    assert ins.n_frames == N
    if cap is not None:
        assert ins.counter_cap == cap  # told by the source (saturation value, bit depth)
    missed, false = match_findings(acq.faults, found)
    assert missed == [], f"missed {missed}; found {found}"
    assert false == [], f"false alarms {false}"
    mod = [f for f in found if f["kind"] == "modulation"]
    if "modulation" in kinds:
        assert abs(mod[0]["frequency_hz"] - 37.0) <= 0.2


@pytest.mark.parametrize("layout, cap", [("hdf5", 255), ("rigaku", 3), ("esrf-csr", 4095),
                                         ("timepix", None)])
def test_no_false_alarm_on_clean_acquisitions(tmp_path, layout, cap):
    """The same speckle without faults (the counter's cap applied): nothing is found."""
    spec = _spec(layout, (), cap, name=f"clean_{layout.replace('-', '_')}")
    for seed in (1, 2):
        acq = write_acquisition(tmp_path, copy.deepcopy(spec), seed=seed)
        assert acq.faults == []
        _ins, found = _inspect(acq)
        assert found == [], f"seed {seed}: {found}"
