"""The planted faults (xpcsviewer.synthetic.faults) are where their truth says, checked
on dense movies rebuilt with plain loops; the dense and Timepix writers give the frames
back through the readers; the demo's faulty acquisitions state their truth."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic.demo_faults import FAULT_SPECS
from xpcsviewer.synthetic.faults import (
    counts_to_events,
    inject_faults,
    match_findings,
    merge_hits,
)
from xpcsviewer.synthetic.sparse_files import write_dense, write_timepix

SHAPE = (12, 16)
N = 400
FT = 0.01


def _movie(hits, n=N, shape=SHAPE):
    """Dense (n, H, W) counts of hits, one hit at a time (the reference)."""
    out = np.zeros((n, *shape), np.int64)
    for f, p, c in zip(*hits, strict=True):
        out[f, p // shape[1], p % shape[1]] += c
    return out


def _background(seed=1, rate=0.3):
    rng = np.random.default_rng(seed)
    movie = rng.poisson(rate, (N, *SHAPE))
    f, r, c = np.nonzero(movie)
    return f, r * SHAPE[1] + c, movie[f, r, c]


FAULTS = {
    "cap": 15,
    "hot_pixels": [{"row": 2, "col": 3, "rate": 4.0}],
    "dead_pixels": [[5, 5], [6, 9]],
    "cosmics": [{"frame": 50, "pixels": [[1, 1], [1, 2], [2, 2]], "counts": 9}],
    "empty_frames": [[100, 119]],
    "modulation": {"q_bin": 2, "frequency_hz": 7.0, "amplitude": 0.8},
    "at_cap": [{"pixels": [[10, 14], [10, 15]], "frames": [200, 299], "rate": 60.0}],
}


def _dyn():
    dyn = np.ones(SHAPE, np.int64)
    dyn[8:, :8] = 2
    return dyn


def test_merge_hits_sums_duplicates_and_sorts():
    f, p, c = merge_hits([3, 1, 1, 3, 2], [4, 7, 7, 4, 0], [1, 2, 5, 1, 0])
    assert f.tolist() == [1, 3] and p.tolist() == [7, 4] and c.tolist() == [7, 2]


def test_every_fault_is_where_its_truth_says():
    base = _background()
    hits, truth = inject_faults(base, SHAPE, N, FT, FAULTS, dynamic_map=_dyn(), seed=3)
    movie = _movie(hits)
    before = _movie(base)
    kinds = [t["kind"] for t in truth]
    assert sorted(kinds) == sorted(["modulation", "hot_pixel", "cosmic", "at_cap",
                                    "dead_pixel", "dead_pixel", "empty_frames"])
    assert all(set(t) == {"kind", "frames", "pixels", "frequency_hz", "detail", "q_bin"}
               for t in truth)
    assert movie.max() <= 15  # the cap clips everything
    # dead pixels never count; empty frames are empty
    assert movie[:, 5, 5].sum() == movie[:, 6, 9].sum() == 0
    assert movie[100:120].sum() == 0 and movie[99].sum() > 0 and movie[120].sum() > 0
    # the cosmic: exactly the counts added in its frame
    for r, c in FAULTS["cosmics"][0]["pixels"]:
        assert movie[50, r, c] == min(15, before[50, r, c] + 9)
    # the hot pixel: its own rate on top (every frame outside the empty block)
    live = np.r_[0:100, 120:N]
    assert movie[live, 2, 3].mean() > 3.0 > 10 * before[:, 2, 3].mean() / 3
    # the bright spot reads the cap in its frames, not outside them
    spot = movie[200:300, 10, 14:16]
    assert (spot == 15).mean() > 0.99 and movie[300:, 10, 14:16].max() < 15
    t_hot = next(t for t in truth if t["kind"] == "hot_pixel")
    assert t_hot["pixels"] == [[2, 3]] and t_hot["frames"] == [0, N - 1]
    t_cap = next(t for t in truth if t["kind"] == "at_cap")
    assert t_cap["frames"] == [200, 299] and t_cap["pixels"] == [[10, 14], [10, 15]]


def test_modulation_is_at_its_frequency_in_its_bin_only():
    base = _background(rate=2.0)
    hits, truth = inject_faults(base, SHAPE, N, FT, {"modulation": FAULTS["modulation"]},
                                dynamic_map=_dyn(), seed=5)
    movie = _movie(hits)
    t = np.arange(N) * FT
    freqs = np.arange(1.0, 50.0, 0.5)

    def amplitude(series):
        # a plain DFT at each frequency (the reference, not the finder's FFT)
        x = series - series.mean()
        return np.array([abs(np.sum(x * np.exp(-2j * np.pi * fr * t))) for fr in freqs])

    in_bin = movie[:, 8:, :8].sum(axis=(1, 2)).astype(float)
    other = movie[:, :8, :].sum(axis=(1, 2)).astype(float)
    a_bin, a_other = amplitude(in_bin), amplitude(other)
    assert freqs[np.argmax(a_bin)] == 7.0
    assert a_bin.max() > 8 * np.median(a_bin)
    assert a_other.max() < 4 * np.median(a_other)  # the other bin is not modulated
    # mean of the thinned bin: (1 + 0.8 sin) / 1.8 of the original on average
    ratio = in_bin.sum() / _movie(base)[:, 8:, :8].sum()
    assert ratio == pytest.approx(1 / 1.8, rel=0.05)
    assert truth[0]["frequency_hz"] == 7.0 and truth[0]["q_bin"] == 2


@pytest.mark.parametrize("bad", [
    {"empty_frames": [[40, 60]], "cosmics": [{"frame": 50, "pixels": [[1, 1]], "counts": 3}]},
    {"dead_pixels": [[2, 3]], "hot_pixels": [{"row": 2, "col": 3, "rate": 1.0}]},
    {"empty_frames": [[390, 400]]},
    {"cosmics": [{"frame": 5, "pixels": [[12, 0]], "counts": 3}]},
])
def test_faults_that_would_hide_each_other_are_refused(bad):
    with pytest.raises(ValueError):
        inject_faults(_background(), SHAPE, N, FT, bad, seed=0)


def test_modulation_needs_the_qmap():
    with pytest.raises(ValueError, match="q-map"):
        inject_faults(_background(), SHAPE, N, FT, {"modulation": FAULTS["modulation"]})


@pytest.mark.parametrize("name", ["frames.h5", "frames.npy"])
def test_dense_writer_gives_the_frames_back(tmp_path, name):
    hits, _ = inject_faults(_background(), SHAPE, N, FT, FAULTS, dynamic_map=_dyn(), seed=3)
    path = write_dense(tmp_path / name, *hits, SHAPE, n_frames=N, frame_time=FT,
                       saturation=15, chunk=37)
    with open_raw_source(path) as raw:
        assert raw.n_frames == N and raw.frame_shape == SHAPE
        np.testing.assert_array_equal(raw.read(0, N), _movie(hits))
    if name.endswith(".h5"):
        import h5py

        from xpcsviewer.io.raw.dense import FRAME_TIME
        from xpcsviewer.synthetic.sparse_files import DENSE_SATURATION

        with h5py.File(path, "r") as f:  # stated as a live reader takes them
            assert f[FRAME_TIME][()] == FT and f[DENSE_SATURATION][()] == 15
            assert f["/entry/data/data"].compression is not None
    with pytest.raises(FileExistsError):
        write_dense(tmp_path / name, *hits, SHAPE)
    with pytest.raises(ValueError, match="does not fit"):
        write_dense(tmp_path / "u8.h5", [0], [0], [300], SHAPE, dtype=np.uint8)


def test_events_read_with_the_bin_time_give_the_frames_back(tmp_path):
    hits = _background(rate=0.5)
    ticks = 1000
    x, y, toa = counts_to_events(*hits, SHAPE, ticks, seed=2)
    assert (np.diff(toa) >= 0).all() and toa.min() == 0
    path = write_timepix(tmp_path / "ev.h5", x, y, toa, FT / ticks, SHAPE)
    with open_raw_source(path, bin_time=FT) as raw:
        assert raw.n_frames == N
        np.testing.assert_array_equal(raw.read(0, N), _movie(hits))


def test_demo_fault_specs_plant_every_kind_inside_the_qmap():
    """Each faulty acquisition of the demo plants every kind on pixels the q-map keeps
    (a fault outside it could not be found), none in the modulated bin."""
    from xpcsviewer.synthetic.demo_sparse import _detector

    assert {s["layout"] for s in FAULT_SPECS} >= {"hdf5", "rigaku"}
    for spec in FAULT_SPECS:
        faults = spec["faults"]
        assert {"hot_pixels", "dead_pixels", "cosmics", "empty_frames", "modulation",
                "at_cap", "cap"} <= set(faults)
        acq = spec["acquisition"]
        assert acq["n_frames"] * acq["frame_time"] >= 5.0  # 0.2 Hz resolved
        assert faults["modulation"]["frequency_hz"] < 0.5 / acq["frame_time"]
        qm, _q, _phi, _mask = _detector(spec)
        dyn = np.asarray(qm.dynamic_roi_map)
        pix = [[p["row"], p["col"]] for p in faults["hot_pixels"]] + faults["dead_pixels"]
        pix += [rc for c in faults["cosmics"] for rc in c["pixels"]]
        pix += [rc for s in faults["at_cap"] for rc in s["pixels"]]
        bins = {int(dyn[r, c]) for r, c in pix}
        assert 0 not in bins and faults["modulation"]["q_bin"] not in bins
        assert 3 <= min(len(c["pixels"]) for c in faults["cosmics"])
        assert max(len(c["pixels"]) for c in faults["cosmics"]) <= 6
    assert any(s["faults"]["cap"] == 3 and s["layout"] == "rigaku" for s in FAULT_SPECS)


def _f(kind, frames, pixels=(), freq=None, q_bin=None):
    return {"kind": kind, "frames": list(frames), "pixels": [list(p) for p in pixels],
            "frequency_hz": freq, "detail": "", "q_bin": q_bin}


TRUTH = [_f("hot_pixel", (0, 99), [(1, 2)]), _f("hot_pixel", (0, 99), [(3, 4)]),
         _f("dead_pixel", (0, 99), [(5, 6)]),
         _f("cosmic", (40, 40), [(7, 7), (7, 8), (8, 8)]),
         _f("empty_frames", (10, 19)),
         _f("at_cap", (50, 59), [(9, 9)]),
         _f("modulation", (0, 99), freq=37.0, q_bin=2)]


def test_match_findings_all_found_nothing_false():
    found = [_f("hot_pixel", (0, 99), [(1, 2), (3, 4)]), _f("dead_pixel", (0, 99), [(5, 6)]),
             _f("cosmic", (40, 40), [(7, 7), (7, 8), (8, 8), (8, 7)]),
             _f("empty_frames", (10, 19)), _f("at_cap", (0, 99), [(9, 9)]),
             _f("at_cap", (0, 99), [(1, 2)]),  # the hot pixel also at the cap: not false
             _f("at_cap", (40, 40)),  # the cosmic's frame at the cap: not false
             _f("modulation", (0, 99), freq=37.15, q_bin=2)]
    assert match_findings(TRUTH, found) == ([], [])


@pytest.mark.parametrize("change, missed_kind", [
    (lambda F: F.__setitem__(0, _f("hot_pixel", (0, 99), [(1, 2)])), "hot_pixel"),
    (lambda F: F.__setitem__(2, _f("cosmic", (41, 41), [(7, 7), (7, 8), (8, 8)])), "cosmic"),
    (lambda F: F.__setitem__(2, _f("cosmic", (40, 40), [(7, 7), (7, 8)])), "cosmic"),
    (lambda F: F.__setitem__(3, _f("empty_frames", (10, 20))), "empty_frames"),
    (lambda F: F.__setitem__(5, _f("modulation", (0, 99), freq=37.3, q_bin=2)), "modulation"),
    (lambda F: F.__setitem__(5, _f("modulation", (0, 99), freq=37.0, q_bin=3)), "modulation"),
])
def test_match_findings_misses(change, missed_kind):
    found = [_f("hot_pixel", (0, 99), [(1, 2), (3, 4)]), _f("dead_pixel", (0, 99), [(5, 6)]),
             _f("cosmic", (40, 40), [(7, 7), (7, 8), (8, 8)]), _f("empty_frames", (10, 19)),
             _f("at_cap", (50, 50), [(9, 9)]), _f("modulation", (0, 99), freq=37.0, q_bin=2)]
    change(found)
    missed, _false = match_findings(TRUTH, found)
    assert [t["kind"] for t in missed] == [missed_kind]


def test_match_findings_false_alarms():
    found = [_f("hot_pixel", (0, 99), [(11, 12)]), _f("empty_frames", (70, 70)),
             _f("at_cap", (40, 41)),
             _f("modulation", (0, 99), freq=12.0, q_bin=2),
             _f("cosmic", (40, 40), [(7, 8)]), _f("empty_frames", (15, 30))]
    _missed, false = match_findings(TRUTH, found)
    assert [(f["kind"], f["frames"]) for f in false] == [
        ("hot_pixel", [0, 99]), ("empty_frames", [70, 70]), ("at_cap", [40, 41]),
        ("modulation", [0, 99])]
