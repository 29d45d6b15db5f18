"""Issue 47 (4): on a sparse source, live reads the next block of hits in a thread while
the last one is correlated. The blocks reach the correlator in order and each once; a
cancel while a read is under way returns only once that read has ended (the source is
then closed with no read in flight); a read's error surfaces in the caller naming the
file; a source not ready for the block read ahead leaves it for the next poll."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.live import SourceNotReady
from xpcsviewer.jobs import live as live_mod
from xpcsviewer.jobs.live import LiveOptions
from xpcsviewer.model.events import EventBlock
from xpcsviewer.progress import Cancelled, CancelToken

SHAPE = (4, 5)
PER_READ = 10  # frames per block


class FakeSource:
    """A sparse source of 3 hits per frame; ``hooks[start]`` runs inside that read."""

    sparse = True
    layout = "fake"
    frame_shape = SHAPE
    dtype = np.dtype(np.uint16)

    def __init__(self, hooks=None) -> None:
        self.hooks = hooks or {}
        self.log: list[tuple] = []  # (start, stop, thread, t_begin, t_end)
        self.active = 0
        self.overlap = False

    def describe(self) -> str:
        return "/data/scan_0001.bin"

    def read_events(self, start: int, stop: int) -> EventBlock:
        self.active += 1
        self.overlap |= self.active > 1
        t = time.monotonic()
        try:
            if start in self.hooks:
                self.hooks[start]()
            f = np.repeat(np.arange(start, stop), 3).astype(np.int64)
            p = np.tile(np.array([0, 7, 19]), stop - start).astype(np.int64)
            return EventBlock(start, stop, f, p, np.ones(f.size, np.uint16))
        finally:
            self.active -= 1
            self.log.append((start, stop, threading.current_thread().name, t,
                             time.monotonic()))


class FakeStream:
    photons = True

    def __init__(self, work: float = 0.0, on_feed=None) -> None:
        self.fed: list[tuple[int, int, int]] = []
        self.work = work
        self.on_feed = on_feed
        self.ends: list[float] = []

    def feed_events(self, block: EventBlock) -> None:
        if self.on_feed is not None:
            self.on_feed(block)
        time.sleep(self.work)
        self.fed.append((block.start, block.stop, block.n_events))
        self.ends.append(time.monotonic())


def _follower(src, stream, monkeypatch):
    monkeypatch.setattr(live_mod, "frames_per_read", lambda hits, frames: PER_READ)
    qm = SimpleNamespace(dynamic_roi_map=np.ones(SHAPE, int),
                         static_roi_map=np.ones(SHAPE, int), shape=SHAPE)
    fol = live_mod._Follower(src, qm, None, LiveOptions(every=1e9), None, None, False)
    fol.stream = stream
    fol.start_iso = "now"  # the stream is set up
    return fol


def test_blocks_come_in_order_once_and_are_read_while_the_last_is_correlated(monkeypatch):
    src, stream = FakeSource(), FakeStream(work=0.05)
    fol = _follower(src, stream, monkeypatch)
    fol.read_to(55, stop=lambda: False, cancel=None, progress=None)
    fol.read_to(75, stop=lambda: False, cancel=None, progress=None)
    want = [(a, min(a + PER_READ, t)) for t, lo in ((55, 0), (75, 55))
            for a in range(lo, t, PER_READ)]
    assert [(a, b) for a, b, _ in stream.fed] == want
    assert [(a, b) for a, b, *_ in src.log] == want  # each block read once
    assert fol.done == 75 and fol.hits == 3 * 75
    assert not src.overlap  # one read at a time
    ahead = [r for r in src.log if r[2].startswith("xpcs-live-read")]
    assert len(ahead) == len(want) - 2  # all but each call's first block
    # a block read ahead began before the block before it was correlated
    ends = dict(zip([a for a, _, _ in stream.fed], stream.ends, strict=True))
    assert all(r[3] < ends[r[0] - PER_READ] for r in ahead)
    assert not fol.ahead.pending  # nothing left under way for the poll that follows
    fol.ahead.close()


def test_cancel_while_a_read_is_under_way_returns_after_that_read(monkeypatch):
    tok = CancelToken()
    slow = threading.Event()

    def slow_read():
        slow.wait(5)
        time.sleep(0.3)  # still reading when the cancel is seen

    def on_feed(block):
        if block.start == 10:  # block 20's read is under way
            tok.cancel()
            slow.set()

    src = FakeSource({20: slow_read})
    stream = FakeStream(on_feed=on_feed)
    fol = _follower(src, stream, monkeypatch)
    with pytest.raises(Cancelled):
        fol.read_to(100, stop=lambda: False, cancel=tok, progress=None)
    t_back = time.monotonic()
    assert [a for a, _, _ in stream.fed] == [0, 10]
    read20 = next(r for r in src.log if r[0] == 20)
    assert read20[4] <= t_back  # the read had ended: a close of the source meets none
    assert not fol.ahead.pending
    fol.ahead.close()


def test_an_error_in_a_read_ahead_names_the_file(monkeypatch):
    def bad():
        raise XpcsFileError("/data/scan_0001.bin", "frame numbers go backwards: frame 3 "
                            "after frame 29", "word 90", "hit words in frame order")

    src = FakeSource({30: bad})
    fol = _follower(src, FakeStream(), monkeypatch)
    with pytest.raises(XpcsFileError, match=r"scan_0001\.bin.*frame numbers go backwards"):
        fol.read_to(60, stop=lambda: False, cancel=None, progress=None)
    read30 = next(r for r in src.log if r[0] == 30)
    assert read30[2].startswith("xpcs-live-read")  # it was raised in the reader thread
    assert fol.done == 30  # the blocks before it were correlated
    fol.ahead.close()


def test_a_block_read_ahead_that_is_not_ready_waits_for_the_next_poll(monkeypatch):
    calls = {"n": 0}

    def not_yet():
        calls["n"] += 1
        if calls["n"] == 1:
            raise SourceNotReady("being written")

    src = FakeSource({20: not_yet})
    stream = FakeStream()
    fol = _follower(src, stream, monkeypatch)
    fol.read_to(40, stop=lambda: False, cancel=None, progress=None)
    assert fol.done == 20
    fol.read_to(40, stop=lambda: False, cancel=None, progress=None)
    assert fol.done == 40 and [a for a, _, _ in stream.fed] == [0, 10, 20, 30]
    fol.ahead.close()


def test_a_stop_drains_the_read_under_way(monkeypatch):
    flag = {"stop": False}
    src = FakeSource({10: lambda: time.sleep(0.2)})
    stream = FakeStream(on_feed=lambda b: flag.update(stop=True))
    fol = _follower(src, stream, monkeypatch)
    fol.read_to(100, stop=lambda: flag["stop"], cancel=None, progress=None)
    t_back = time.monotonic()
    assert fol.done == 10 and not fol.ahead.pending
    assert src.log[1][0] == 10 and src.log[1][4] <= t_back  # ended before the return
    # the block read ahead and dropped is read again when the run goes on
    flag["stop"] = False
    stream.on_feed = None
    fol.read_to(30, stop=lambda: False, cancel=None, progress=None)
    assert [a for a, _, _ in stream.fed] == [0, 10, 20]
    fol.ahead.close()
