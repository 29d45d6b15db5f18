"""The values the correlators read (issue 44): a partition is one value, made from maps
(numbers from their maxima) or read off a QMap; frames are a stream or an array; the
spec's bins may be numbers."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import compute_qmap
from xpcsviewer.compute.inputs import FrameStream, Partition, frame_chunks
from xpcsviewer.compute.options import AgesOptions, MultitauOptions, TwotimeOptions
from xpcsviewer.compute.spec import CorrelateSpec, SpecError


def _maps():
    dq = np.array([[1, 1, 2], [0, 2, 2]], np.uint8)
    sq = np.array([[1, 2, 3], [0, 4, 3]], np.uint16)
    return dq, sq


def test_partition_from_maps_takes_the_maxima():
    dq, sq = _maps()
    p = Partition(dq, sq)
    assert (p.n_dynamic, p.n_static, p.shape, p.mask) == (2, 4, (2, 3), None)
    assert isinstance(p.n_dynamic, int) and isinstance(p.n_static, int)
    more = Partition(dq, sq, n_dynamic=5, n_static=9)  # a q-map with empty bins
    assert (more.n_dynamic, more.n_static) == (5, 9)
    pix = more.pixels()
    assert pix.n_dynamic == 5 and pix.n_static == 9 and pix.n_pixels == 5


def test_partition_of_a_qmap_reads_its_attributes():
    q, phi = compute_qmap((12, 16), 10.0, 5.0, 75e-6, 3.0, 2.0)
    qm = make_partition(q, phi, None, PartitionGrid(3, 9))
    qm.dynamic_index_mapping = np.append(qm.dynamic_index_mapping, 99)  # an empty bin
    p = Partition.of(qm)
    assert p.dynamic_roi_map is qm.dynamic_roi_map and p.mask is qm.mask
    assert (p.n_dynamic, p.n_static) == (qm.n_dynamic, qm.n_static) == (4, 9)
    assert Partition.of(p) is p
    with pytest.raises(TypeError, match="dynamic_roi_map"):
        Partition.of(np.ones((2, 2)))


def test_partition_checks_stay_in_the_pixel_selection():
    dq, sq = _maps()
    bad = Partition(dq, sq, np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="mask shape"):
        bad.pixels()


def test_frame_chunks_of_a_stream_and_an_array():
    frames = np.arange(7 * 2 * 3).reshape(7, 2, 3)
    chunks, n = frame_chunks(frames, 3)
    assert n == 7 and [c.shape[0] for c in chunks] == [3, 3, 1]
    parts = [frames[:4], frames[4:]]
    chunks, n = frame_chunks(FrameStream(lambda: iter(parts), 7), 3)
    assert n == 7 and [c.shape[0] for c in chunks] == [4, 3]
    assert FrameStream(lambda: iter(parts), 7).t0 == 1.0
    assert FrameStream(lambda: iter(parts), 7, 0.5, stride=2, avg=3).t0 == 3.0
    with pytest.raises(ValueError, match=r"\(N, H, W\)"):
        frame_chunks(frames[0], 3)
    with pytest.raises(TypeError, match="FrameStream"):
        frame_chunks(iter(parts), 3)


def test_spec_bins_as_numbers():
    spec = CorrelateSpec(mode="twotime", dq=np.array([3, 1]))
    assert spec.dq == (3, 1)
    assert CorrelateSpec.from_dict(spec.as_dict()) == spec
    assert CorrelateSpec(dq="1-2").dq == "1-2"
    with pytest.raises(SpecError, match="outside"):
        CorrelateSpec(dq=[0, 2])


def test_options_keep_the_correlators_defaults():
    assert MultitauOptions().delays_per_level == 4 and MultitauOptions().chunk_size == 128
    assert TwotimeOptions().chunk_size == 256 and TwotimeOptions().block_rows == 1024
    assert TwotimeOptions().c2_format == "full"
    assert AgesOptions().frame_time is None and AgesOptions().batch == 32
