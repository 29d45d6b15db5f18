"""Display pixels made in a worker: quantization, the stand-in colour table, histogram."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.views.display_image import (
    NO_VALUE,
    image_histogram,
    quantize_image,
    remap_table,
)


def reference_index(v: float, lo: float, hi: float) -> int:
    """One pixel, the plain way: which of 255 equal steps of [lo, hi] holds v."""
    if not np.isfinite(v):
        return NO_VALUE
    if v <= lo:
        return 0
    if v >= hi:
        return 254
    return min(254, int((v - lo) // ((hi - lo) / 255)))


def test_quantize_matches_per_pixel_reference():
    rng = np.random.default_rng(3)
    img = rng.normal(1.0, 2.0, size=(37, 41))
    img[0, :5] = [np.nan, np.inf, -np.inf, -100.0, 100.0]
    lo, hi = -1.5, 3.25
    got = quantize_image(img, lo, hi)
    assert got.dtype == np.uint8 and got.shape == img.shape
    want = np.array([[reference_index(v, lo, hi) for v in row] for row in img])
    # floating-point rounding may move a value sitting on a step edge by one
    assert np.mean(got == want) > 0.999
    assert np.abs(got.astype(int) - want).max() <= 1
    assert list(got[0, :5]) == [NO_VALUE, NO_VALUE, NO_VALUE, 0, 254]
    # float32 input gives the same indices up to edge rounding
    got32 = quantize_image(img.astype(np.float32), lo, hi)
    assert np.abs(got32.astype(int) - want).max() <= 1


def test_quantize_degenerate_levels_do_not_divide_by_zero():
    out = quantize_image(np.array([[0.0, 0.5, 2.0]]), 1.0, 1.0)
    assert list(out[0]) == [0, 0, 254]


def colours():
    c = np.zeros((255, 4), np.uint8)
    c[:, 0] = np.arange(255)  # red channel = colour index
    c[:, 3] = 255
    return c


def test_remap_table_identity_and_transparent_no_value():
    table = remap_table(colours(), (0.0, 2.0), (0.0, 2.0))
    assert table.shape == (256, 4)
    np.testing.assert_array_equal(table[:255, 0], np.arange(255))
    assert table[NO_VALUE, 3] == 0


def test_remap_table_stands_in_for_requantization():
    """Pixels quantized for old levels, shown through the table, take the colour that
    quantizing for the new levels would give (within a step), for values inside both."""
    rng = np.random.default_rng(0)
    v = rng.uniform(0.0, 10.0, 5000)
    old, new = (0.0, 10.0), (2.0, 6.0)
    shown = remap_table(colours(), old, new)[quantize_image(v, *old), 0].astype(int)
    exact = quantize_image(v, *new).astype(int)
    # one old step spans 4000/255... new steps: 10/4 = 2.5 new steps at most, plus rounding
    assert np.abs(shown - exact).max() <= 3
    inside = (v > 2.1) & (v < 5.9)
    assert np.corrcoef(shown[inside], exact[inside])[0, 1] > 0.999
    assert (shown[v < 1.9] == 0).all() and (shown[v > 6.1] == 254).all()


def test_remap_table_rejects_wrong_colours():
    with pytest.raises(ValueError, match=r"\(255, 4\)"):
        remap_table(np.zeros((256, 3), np.uint8), (0, 1), (0, 1))


def test_histogram_counts_finite_pixels():
    img = np.array([0.0, 1.0, 1.0, 2.0, np.nan, np.inf])
    centres, counts = image_histogram(img, bins=2)
    np.testing.assert_allclose(centres, [0.5, 1.5])
    np.testing.assert_allclose(counts, [1, 3])
    big = np.arange(3_000_000, dtype=np.float32)
    centres, counts = image_histogram(big, bins=10, max_samples=1_000_000)
    assert counts.sum() == pytest.approx(1_000_000, rel=1e-6)
    np.testing.assert_allclose(counts, counts[0], rtol=1e-3)  # a uniform ramp stays flat
    assert image_histogram(np.full(4, np.nan))[0].size == 0
