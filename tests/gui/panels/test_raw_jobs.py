"""The Raw tab's Qt-free helpers against plain loops: the bins' outline and colours, the
frame ranges to exclude, the pixels of findings and of a region, the display values."""

from __future__ import annotations

import numpy as np

from xpcsviewer.gui.panels._raw_jobs import (
    bin_overlays,
    bins_box,
    display_values,
    exclusion_ranges,
    findings_mask,
    merge_ranges,
    roi_pixels,
)
from xpcsviewer.model.raw_inspect import Finding


def test_bin_overlays_match_a_loop():
    rng = np.random.default_rng(3)
    m = rng.integers(0, 4, (9, 11))
    m[2:6, 3:8] = 7
    outline, colour = bin_overlays(m)
    h, w = m.shape
    want = np.zeros((h, w), np.uint8)
    for r in range(h):
        for c in range(w):
            if m[r, c] == 0:
                continue
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < h and 0 <= cc < w and m[rr, cc] != m[r, c]:
                    want[r, c] = 1
    np.testing.assert_array_equal(outline, want)
    assert outline[4, 5] == 0 and outline[2, 3] == 1  # inside the block / its corner
    for r in range(h):
        for c in range(w):
            assert colour[r, c] == (0 if m[r, c] == 0 else (m[r, c] - 1) % 12 + 1)


def test_merge_and_exclusion_ranges():
    # (0, 2) and (3, 3) touch, (5, 9) and (8, 12) overlap, frame 4 lies between
    assert merge_ranges([(5, 9), (0, 2), (3, 3), (8, 12), (20, 20)]) == [
        (0, 3), (5, 12), (20, 20)]
    assert merge_ranges([]) == []
    fs = [Finding("hot_pixel", (0, 99), ((1, 2),)),  # the whole run: never excluded
          Finding("empty_frames", (40, 59)), Finding("cosmic", (60, 60), ((3, 3), (3, 4))),
          Finding("cosmic", (10, 10), ((5, 5),))]
    assert exclusion_ranges(fs, 100) == [(10, 10), (40, 60)]


def test_findings_mask_sets_exactly_their_pixels():
    fs = [Finding("hot_pixel", (0, 9), ((1, 2), (3, 4))), Finding("cosmic", (5, 5),
                                                                  ((3, 4), (0, 0), (9, 9)))]
    sel = findings_mask(fs, (4, 5))
    want = np.zeros((4, 5), bool)
    for r, c in ((1, 2), (3, 4), (0, 0)):  # (9, 9) lies outside: left out
        want[r, c] = True
    np.testing.assert_array_equal(sel, want)


def test_roi_pixels_clip_and_mask():
    mask = np.ones((6, 7), bool)
    mask[2, 3] = False
    got = roi_pixels(1, 4, 2, 9, (6, 7), mask)
    want = [(r, c) for r in range(1, 4) for c in range(2, 7) if mask[r, c]]
    assert got == want
    assert roi_pixels(5, 5, 0, 3, (6, 7)) == []


def test_display_values_keep_single_photons_apart_from_empty_pixels():
    img = np.zeros((4, 4))
    img[0, 0], img[1, 1], img[2, 2] = 1.0, 3.0, 40.0
    shown, (lo, hi) = display_values(img, log=True)
    assert shown[3, 3] == -1.0  # a decade below the lowest count
    assert shown[1, 1] == np.log10(3.0)
    assert shown[3, 3] < lo < shown[0, 0] < hi  # zero and one photon differ in colour
    lin, (llo, lhi) = display_values(img, log=False)
    assert llo == 0.0 and lhi > llo and lin is not None
    zeros, levels = display_values(np.zeros((2, 2)), log=True)
    assert levels == (0.0, 1.0) and not zeros.any()


def test_bins_box_holds_every_bin_pixel():
    m = np.zeros((10, 12), int)
    assert bins_box(m) is None
    m[3, 4] = m[6, 9] = 2
    r0, r1, c0, c1 = bins_box(m)
    assert (r0, r1, c0, c1) == (3, 7, 4, 10)
    assert not m[:r0].any() and not m[r1:].any() and not m[:, :c0].any() and not m[:, c1:].any()
