"""A fit belongs to the curves it was made from: file, bin, fitted points and data."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from xpcsviewer.fitting.block_fits import fit_g2_blocks
from xpcsviewer.fitting.blocks import g2_blocks


@pytest.fixture(scope="module")
def blocks(fake_results):
    return g2_blocks(fake_results)


@pytest.fixture(scope="module")
def fits(blocks):
    return fit_g2_blocks(blocks, model="single")


def test_keys_name_file_bin_and_points(blocks, fits):
    assert fits.curve_keys == [b.curve_key(j) for b in blocks for j in range(b.n_bins)]
    assert fits.sources[0] == str(blocks[0].source) and blocks[0].source.endswith(".hdf")
    b = blocks[0]
    assert fits.match(b, 2) == 2
    # other data, another point mask or another file: no row
    g2 = b.g2.copy()
    g2[5, 2] += 1e-9
    assert fits.match(replace(b, g2=g2), 2) is None
    assert fits.match(replace(b, g2=g2), 3) == 3  # the other bins are unchanged
    ex = np.zeros_like(b.valid)
    ex[4, 2] = True
    assert fits.match(replace(b, excluded=ex), 2) is None
    assert fits.match(replace(b, source="/elsewhere/" + b.source.split("/")[-1]), 2) is None
    # an invalid point is not a fitted point: dropping it changes nothing
    assert fits.match(b, 0) == 0
    t = replace(b, tau=b.tau[:-3], g2=b.g2[:-3], g2_err=b.g2_err[:-3], valid=b.valid[:-3],
                delay_frames=b.delay_frames[:-3])
    assert not b.valid[-3:, 0].any()
    assert fits.match(t, 0) == 0 and fits.match(t, 1) is None


def test_for_blocks_reorders_and_reindexes(blocks, fits):
    later = [replace(blocks[1], file_index=0)]
    sub = fits.for_blocks(later)
    n0 = blocks[0].n_bins
    assert sub.n_curves == blocks[1].n_bins
    assert (sub.file_index == 0).all()
    np.testing.assert_array_equal(sub.params["tau"], fits.params["tau"][n0:])
    assert sub.file_labels == fits.file_labels[n0:]
    assert [sub.match(later[0], j) for j in range(later[0].n_bins)] == list(range(sub.n_curves))
    assert fits.for_blocks([replace(blocks[0], source="/x.hdf")]) is None


class _Band:
    """A posterior stand-in: the band of curve k is k everywhere."""

    def __init__(self, n):
        self.n = n

    def band(self, grid):
        return np.broadcast_to(np.arange(self.n, dtype=float)[:, None, None],
                               (self.n, 3, grid.size)).copy()


def test_take_keeps_each_rows_band(blocks, fits):
    n0, n1 = blocks[0].n_bins, blocks[1].n_bins
    f = replace(fits, bands=[(np.arange(n0), _Band(n0)), (np.arange(n0, n0 + n1), _Band(n1))],
                band_cache={})
    rows = np.array([n0 + 1, 2])  # file 2's second bin, file 1's third
    sub = f.take(rows)
    grid = np.linspace(1e-3, 1, 5)
    np.testing.assert_array_equal(sub.band([0, 1], grid)[:, 0, 0], [1.0, 2.0])
    np.testing.assert_array_equal(sub.band([0, 1], grid), f.band(rows, grid))
