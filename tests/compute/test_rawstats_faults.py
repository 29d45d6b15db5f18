"""The fault finders (compute.rawstats.faults, clusters, spectrum) on small synthetic runs:
each injected fault is found where it was put, and a clean run (speckle included) gives
no finding."""

import numpy as np
import pytest

from xpcsviewer.compute.rawstats.accumulate import RawStatsAccumulator
from xpcsviewer.compute.rawstats.faults import find_faults
from xpcsviewer.compute.rawstats.spectrum import find_modulations, power_spectrum

H, W, N = 24, 32, 2000


def _speckle(rng, n=N, rate=0.01, size=2):
    """Photon frames of a dynamic speckle at ``rate`` counts/pixel/frame: an exponential
    intensity on speckles of ``size`` x ``size`` pixels, fresh every 5 frames."""
    sh = (n // 5 + 1, H // size, W // size)
    inten = rng.exponential(rate, sh).repeat(size, 1).repeat(size, 2)
    inten = np.repeat(inten, 5, axis=0)[:n]
    return rng.poisson(inten)


def _bins():
    r = np.hypot(*np.meshgrid(np.arange(H) - 3.0, np.arange(W) - 4.0, indexing="ij"))
    return np.minimum(1 + (r // 8).astype(int), 4)


def _run(x, bins=None, cap=None, frame_time=None):
    acc = RawStatsAccumulator((H, W), x.shape[0], bins=bins,
                              caps=(cap,) if cap else (), engine="array")
    f, p = np.nonzero(x.reshape(x.shape[0], -1))
    acc.add_hits(f, p, x.reshape(x.shape[0], -1)[f, p])
    return find_faults(acc.finish(cap), frame_time)


@pytest.mark.parametrize("with_bins", [True, False])
def test_clean_speckle_gives_no_finding(with_bins):
    rng = np.random.default_rng(11)
    x = _speckle(rng, rate=0.01)  # ~1 % occupancy, 2 x 2 speckles
    assert _run(x, _bins() if with_bins else None, cap=15) == []
    # a bright, static speckle pattern: pixel means spread far beyond Poisson
    static = rng.poisson(np.broadcast_to(rng.exponential(0.5, (H, W)), (N, H, W)))
    assert [f.kind for f in _run(static, _bins() if with_bins else None)] == []


@pytest.mark.parametrize("with_bins", [True, False])
def test_hot_and_dead_pixels(with_bins):
    rng = np.random.default_rng(12)
    x = rng.poisson(0.05, (N, H, W))
    x[:, 10, 20] = rng.poisson(1.5, N)  # hot: 30 x its bin
    x[:, 5, 5] = 0  # dead: 100 counts expected
    x[:, 15:17, 8] = 0  # two neighbours dead: one finding
    found = _run(x, _bins() if with_bins else None)
    hot = [f for f in found if f.kind == "hot_pixel"]
    dead = [f for f in found if f.kind == "dead_pixel"]
    assert [f.pixels for f in hot] == [((10, 20),)]
    assert sorted(f.pixels for f in dead) == [((5, 5),), ((15, 8), (16, 8))]
    assert {f.kind for f in found} == {"hot_pixel", "dead_pixel"}
    assert hot[0].frames == (0, N - 1) and (hot[0].q_bin is not None) == with_bins


def test_cosmic_cluster_found_speckle_not():
    rng = np.random.default_rng(13)
    x = _speckle(rng, rate=0.01)
    x[700, 3:5, 9:11] = [[6, 9], [4, 7]]  # a four-pixel cluster in one frame
    x[1200, 20, 5:8] = 5  # a three-pixel track
    x[900, 12, 12:14] = 30  # two pixels only: not a cluster
    cos = [f for f in _run(x, _bins()) if f.kind == "cosmic"]
    assert [(f.frames, f.pixels) for f in cos] == [
        ((700, 700), ((3, 9), (3, 10), (4, 9), (4, 10))),
        ((1200, 1200), ((20, 5), (20, 6), (20, 7)))]


def test_empty_and_dropped_frames():
    rng = np.random.default_rng(14)
    x = rng.poisson(0.01, (N, H, W))  # ~7.7 photons per frame
    x[300:340] = 0  # a block of empty frames
    x[1500] = 0  # one empty frame: possible at this rate, not reported
    emp = [f for f in _run(x) if f.kind == "empty_frames"]
    assert [f.frames for f in emp] == [(300, 339)]
    y = rng.poisson(0.2, (N, H, W))  # ~150 photons per frame: one empty frame is a fault
    y[[50, 51, 999]] = 0
    y[1400] = 0
    y[1400, 0, 0] = 3
    emp = [f for f in _run(y) if f.kind == "empty_frames"]
    assert [f.frames for f in emp] == [(50, 51), (999, 999), (1400, 1400)]
    # a bright spot (two pixels, 10^4 counts each) lit in the first 1200 frames only: the
    # frames after it are not empty, the block inside them is (demo R03's case)
    z = rng.poisson(0.05, (N, H, W))
    z[:1200, 5, 5:7] = 10_000
    z[1500:1530] = 0
    emp = [f for f in _run(z) if f.kind == "empty_frames"]
    assert [f.frames for f in emp] == [(1500, 1529)]


def test_pixels_and_frames_at_the_cap():
    rng = np.random.default_rng(15)
    x = np.minimum(rng.poisson(0.05, (N, H, W)), 3)  # 2-bit mode
    x[:, 7, 7] = np.minimum(rng.poisson(2.5, N), 3)  # at the cap in ~46 % of frames
    x[1000:1003, :12, :] = 3  # three saturated frames
    found = [f for f in _run(x, cap=3) if f.kind == "at_cap"]
    px = [f for f in found if f.pixels]
    fr = [f for f in found if not f.pixels]
    assert len(px) == 1 and px[0].pixels[0] == (7, 7)
    assert [f.frames for f in fr] == [(1000, 1002)]


def test_modulation_frequency_within_a_fraction_of_a_bin():
    rng = np.random.default_rng(16)
    bins = _bins()
    n, dt, f0 = 4096, 1e-3, 37.3  # 37.3 Hz: between the spectrum's 0.244 Hz bins
    t = np.arange(n) * dt
    lam = 0.05 * np.ones((n, H, W))
    lam[:, bins == 2] *= (1 + 0.3 * np.sin(2 * np.pi * f0 * t))[:, None]
    x = rng.poisson(lam)
    found = _run(x, bins, frame_time=dt)
    mod = [f for f in found if f.kind == "modulation"]
    assert len(mod) == 1 and mod[0].q_bin == 2
    assert abs(mod[0].frequency_hz - f0) < 0.05
    assert "other bins' sum" in mod[0].detail
    # no frame time: cycles per frame, frequency_hz None
    (m2,) = find_modulations(x.reshape(n, -1)[:, (bins == 2).ravel()].sum(1)[:, None], None)
    assert m2.frequency_hz is None and "cycles/frame" in m2.detail
    # the clean control: no line
    assert find_modulations(rng.poisson(50.0, (n, 3)).astype(float), dt) == []


def test_power_spectrum_of_a_sine():
    n, dt = 1000, 0.01
    x = 5 + np.sin(2 * np.pi * 10.0 * np.arange(n) * dt)
    f, p = power_spectrum(x, dt)
    assert f.shape == p.shape == (n // 2 + 1,)
    assert f[np.argmax(p)] == pytest.approx(10.0)
    assert p.sum() * 2 / n == pytest.approx(0.5, rel=1e-9)  # Parseval: the sine's variance


def test_a_lasting_line_against_a_step_and_a_burst():
    """lasting(): a steady sinusoid is present in every quarter of the run; a step (a
    spot that comes and goes) or a line in one half only is not a lasting modulation,
    however strong its power over the whole run."""
    from xpcsviewer.compute.rawstats.spectrum import _line, lasting, line_threshold

    n = 4000
    rng = np.random.default_rng(5)
    t = np.arange(n)
    noise = rng.poisson(50.0, n).astype(np.float64)
    cases = {
        "steady": (noise + 6.0 * np.sin(2 * np.pi * 37.3 * t / n), True),
        "step": (noise + 40.0 * ((t >= 1200) & (t < 1600)), False),
        "burst": (noise + 12.0 * np.sin(2 * np.pi * 37.3 * t / n) * (t < n // 2), False),
    }
    thr = line_threshold(n // 2, 256)
    for name, (x, want) in cases.items():
        j, r, _spec, _ratio, level = _line(x, 4, 256)
        assert r > thr, name  # each is a line by its power over the whole run
        assert lasting(x, float(j), float(level[j]), r) is want, name


def test_noise_level_is_the_median_of_each_segment():
    """noise_level(): the median of each of the near-equal segments / ln 2 at its
    centre, interpolated (a loop over the segments as the reference)."""
    import itertools
    import math

    from xpcsviewer.compute.rawstats.spectrum import noise_level

    rng = np.random.default_rng(9)
    for n, seg in ((20, 16), (257, 16), (12345, 256), (40001, 256)):
        p = rng.exponential(size=n)
        k = max(1, (n - 1) // max(8, min(seg, n - 1)))
        edges = np.linspace(1, n, k + 1).astype(np.int64)
        pairs = list(itertools.pairwise(edges.tolist()))
        want = np.interp(np.arange(n), [(a + b - 1) / 2.0 for a, b in pairs],
                         [np.median(p[a:b]) / math.log(2.0) for a, b in pairs])
        np.testing.assert_array_equal(noise_level(p, seg), want)


def test_no_qmap_a_shadow_and_the_dark_edge_are_no_dead_pixels():
    """Without a q-map nothing masks a beamstop's shadow (a dark disk) or the dark beyond
    the illuminated area; their rims have lit neighbours. Only the two lone dead pixels
    (and a 2-pixel dead pair) in the lit area are found."""
    rng = np.random.default_rng(21)
    x = rng.poisson(0.05, (N, H, W))
    rr, cc = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    x[:, np.hypot(rr - 12, cc - 16) < 3.5] = 0  # the beamstop's shadow
    x[:, :, 27:] = 0  # beyond the illuminated area
    dead = [(3, 4), (20, 9), (8, 21), (8, 22)]
    for r, c in dead:
        x[:, r, c] = 0
    found = [f for f in _run(x) if f.kind == "dead_pixel"]
    assert sorted(p for f in found for p in f.pixels) == sorted(dead)
    assert len(found) == 3  # the pair is one finding
