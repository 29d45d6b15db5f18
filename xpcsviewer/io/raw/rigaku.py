"""APS 8-ID-I Rigaku XSPA ``.bin`` photon lists: one module (500k) or the six of a 3M.

A ``.bin`` file is a flat list of little-endian 64-bit words, one per hit, in frame order::

    bits 40-63  frame   (24 bits, from 0)
    bits 16-36  pixel   (flat index row * 1024 + col into the 512 x 1024 module)
    bits  0-11  count
    bits 12-15 and 37-39 are zero

The number of frames is the last word's frame + 1 (frames after the last hit cannot be
told from the file). The file holds no frame time. A frame's first word is found by a
binary search over word positions (single 8-byte reads), and a frame range is read with
one bounded read: the file is never memory-mapped nor read whole.

The Rigaku 3M is six such module files ``NAME.bin.000`` ... ``NAME.bin.005`` (or
``NAME.000`` ...) on a 3 x 2 canvas with gaps of 70 rows and 52 columns (1676 x 2100
pixels); canvas position ``k`` (row ``k // 2``, column ``k % 2``) holds the module file
with suffix ``.00{(5, 0, 4, 1, 3, 2)[k]}``.

Pixel indices offset by 2**20: the 8-ID-I pipeline writes some module files with every
pixel index offset by ``2**20`` (the module's number in the upper bits of the field). An
index in ``[2**20, 2**20 + 512 * 1024)`` is folded back to ``index - 2**20``; anything
else outside the module is an error naming the word.

The word is decoded here only (:func:`frame_field`, :func:`pixel_field`,
:func:`count_field`, :func:`fold_pixels`); the growing-file reader
(:mod:`xpcsviewer.io.raw.live_rigaku`) uses the same functions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from xpcsviewer.io._h5 import open_regular
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.sparse import SparseSource

__all__ = [
    "MODULE_PIXELS",
    "MODULE_SHAPE",
    "PIXEL_OFFSET",
    "RIGAKU_3M_SHAPE",
    "WORD",
    "Rigaku3M",
    "RigakuBin",
    "check_frame_order",
    "count_field",
    "first_word_of_frame",
    "fold_pixels",
    "frame_field",
    "is_3m_stem",
    "looks_like_rigaku",
    "pixel_field",
    "rigaku_layout",
    "rigaku_module_files",
    "rigaku_verdict",
    "word_frame",
]

MODULE_SHAPE = (512, 1024)
MODULE_PIXELS = MODULE_SHAPE[0] * MODULE_SHAPE[1]
#: rows and columns between modules of the 3M
GAP_ROWS, GAP_COLS = 70, 52
RIGAKU_3M_SHAPE = (3 * MODULE_SHAPE[0] + 2 * GAP_ROWS, 2 * MODULE_SHAPE[1] + GAP_COLS)
#: module file suffix (.00N) at canvas position k (row k // 2, column k % 2)
PLACEMENT = (5, 0, 4, 1, 3, 2)
#: the 8-ID-I pipeline's offset of module pixel indices (folded back)
PIXEL_OFFSET = 1 << 20

# ---------------------------------------------------------------- the hit word, once
#: one hit: a little-endian 64-bit word
WORD = np.dtype("<u8")
FRAME_SHIFT = 40  # bits 40-63
PIXEL_SHIFT = 16  # bits 16-36
PIXEL_BITS = 21
COUNT_MASK = 0xFFF  # bits 0-11
_RESERVED = (0xF << 12) | (0x7 << 37)
_MODULE_RE = re.compile(r"\.00([0-5])$")
_EXPECTED_WORD = "an APS Rigaku XSPA hit word (bits 12-15 and 37-39 zero)"
#: words sampled through a file by :func:`rigaku_verdict`
_SAMPLES = 62


def word_frame(word: int) -> int:
    """The frame of one hit word (a Python int)."""
    return word >> FRAME_SHIFT


def _decode_one(word: int) -> tuple[int, int, int]:
    return (word_frame(word), (word >> PIXEL_SHIFT) & ((1 << PIXEL_BITS) - 1),
            word & COUNT_MASK)


def frame_field(words: np.ndarray) -> np.ndarray:
    """The frames of hit words (uint64: a caller casts or views them)."""
    return words >> np.uint64(FRAME_SHIFT)


def pixel_field(words: np.ndarray) -> np.ndarray:
    """The pixel fields of hit words (uint64, 21 bits; :func:`fold_pixels` checks them)."""
    return (words >> np.uint64(PIXEL_SHIFT)) & np.uint64((1 << PIXEL_BITS) - 1)


def count_field(words: np.ndarray) -> np.ndarray:
    """The counts of hit words (uint16, 12 bits)."""
    return (words & np.uint64(COUNT_MASK)).astype(np.uint16)


def fold_pixels(path: Path, pixel: np.ndarray, first: int) -> None:
    """Fold the 8-ID-I offset (2**20) out of the pixel fields of words ``first, first +
    1, ...`` in place (signed integers); raise naming the first word whose pixel is
    outside the module."""
    if not pixel.size or int(pixel.max()) < MODULE_PIXELS:
        return
    folded = (pixel >= PIXEL_OFFSET) & (pixel < PIXEL_OFFSET + MODULE_PIXELS)
    pixel[folded] -= PIXEL_OFFSET
    bad = pixel >= MODULE_PIXELS
    if bad.any():
        j = int(np.argmax(bad))
        raise XpcsFileError(
            path, f"word {first + j} holds pixel index {int(pixel[j])}, outside the "
            f"{MODULE_SHAPE[0]} x {MODULE_SHAPE[1]} module", "pixel field",
            f"pixel indices in 0..{MODULE_PIXELS - 1} (or offset by 2**20)")


def check_frame_order(path: Path, frame: np.ndarray, first: int) -> None:
    """Raise naming the first of words ``first, first + 1, ...`` whose frame is before
    the frame of the word before it."""
    back = frame[1:] < frame[:-1]
    if back.any():
        k = int(np.argmax(back)) + 1
        raise XpcsFileError(
            path, f"frame numbers go backwards: frame {int(frame[k])} after frame "
            f"{int(frame[k - 1])}", f"word {first + k}", "hit words in frame order")


def first_word_of_frame(frame_of: Callable[[int], int], frame: int, lo: int,
                        hi: int) -> int:
    """The first word in ``[lo, hi)`` whose frame is >= ``frame`` (binary search;
    ``frame_of(i)``: the frame of word ``i``)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if frame_of(mid) < frame:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _plausible(word: int) -> bool:
    _, pixel, _ = _decode_one(word)
    return not word & _RESERVED and pixel < PIXEL_OFFSET + MODULE_PIXELS


def _a_hit(word: int) -> bool:
    """A plausible word with a count: a hit (a count-0 word only marks the last frame)."""
    return _plausible(word) and word & COUNT_MASK > 0


def _sampled(fh, n_words: int) -> list[int]:
    """Up to _SAMPLES words evenly spread strictly between the first and the last."""
    out = []
    for i in sorted({1 + (n_words - 2) * k // _SAMPLES for k in range(_SAMPLES)}):
        if 0 < i < n_words - 1:
            fh.seek(8 * i)
            out.append(int.from_bytes(fh.read(8), "little"))
    return out


def rigaku_verdict(path: str | Path) -> tuple[bool, str]:
    """(whether the words of ``path`` are Rigaku hit words, why not). Cheap: at most
    _SAMPLES + 2 single-word reads. Hits: the first whole word is a hit (reserved bits
    zero, pixel field within a module or offset by 2**20, a count of 1 or more) and the
    last whole word plausible (a count of 0 marks the last frame); or, when one of these
    two is damaged, the words sampled evenly between them are hits in frame order (then
    :class:`RigakuBin` names the damaged word). The caller has ruled out HDF5 and NumPy
    files."""
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 8:
                return False, f"{size} bytes, less than one 8-byte word"
            n = size // 8
            first = int.from_bytes(fh.read(8), "little")
            fh.seek((n - 1) * 8)
            last = int.from_bytes(fh.read(8), "little")
            if _a_hit(first) and _plausible(last):
                return True, ""
            inner = _sampled(fh, n) if n >= 10 else []
    except OSError as exc:
        return False, f"cannot be read ({exc.strerror})"
    frames = [word_frame(w) for w in inner]
    if len(inner) >= 8 and all(_a_hit(w) for w in inner) and frames == sorted(frames):
        return True, ""
    at, word = ("word 0", first) if not _a_hit(first) else (f"word {n - 1} (the last)", last)
    return False, (f"{at} is {word:#018x}, not a Rigaku hit word (reserved bits 12-15 and "
                   "37-39 zero, a count of 1 or more)")


def looks_like_rigaku(path: str | Path) -> bool:
    """True when ``path`` holds Rigaku hit words (:func:`rigaku_verdict`). The frame
    order is not looked at here: :class:`RigakuBin` says when frames go backwards."""
    return rigaku_verdict(path)[0]


def is_3m_stem(p: Path) -> bool:
    """``p`` is the common stem of Rigaku 3M module files (``NAME.bin`` for
    ``NAME.bin.000`` ...), which does not exist itself."""
    return not p.exists() and p.with_name(p.name + ".000").is_file()


def rigaku_layout(p: Path) -> str | None:
    """``"rigaku"`` or ``"rigaku-3m"`` (a module file with siblings) when the words of
    ``p`` look like hits (:func:`looks_like_rigaku`), else None."""
    if not looks_like_rigaku(p):
        return None
    return "rigaku-3m" if rigaku_module_files(p) is not None and _MODULE_RE.search(
        p.name) else "rigaku"


def rigaku_module_files(path: str | Path) -> list[Path] | None:
    """The six module files ``STEM.000`` ... ``STEM.005`` that ``path`` belongs to (one of
    them, or ``STEM`` itself), in suffix order; None when ``path`` is a lone file (no
    ``.00N`` suffix and no ``STEM.000`` beside it, or no sibling module file exists)."""
    p = Path(path)
    m = _MODULE_RE.search(p.name)
    stem = p.name[: m.start()] if m else p.name
    files = [p.with_name(f"{stem}.00{k}") for k in range(6)]
    others = [f for f in files if f.name != p.name]
    if not any(f.exists() for f in others):
        return None
    return files


class _ModuleFile:
    """One ``.bin`` file: word reads, the frame search and checked range reads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None
        self._bounds: dict[int, int] = {}
        if not path.is_file():
            from xpcsviewer.io._h5 import _missing_reason

            raise XpcsFileError(path, "is a folder, not a file" if path.is_dir()
                                else _missing_reason(path))
        try:
            self._fh = open_regular(path)  # kept open; closed by close()
            size = os.fstat(self._fh.fileno()).st_size
        except OSError as exc:
            raise XpcsFileError(path, f"cannot be opened ({exc.strerror})") from None
        if size == 0:
            self.close()
            raise XpcsFileError(path, "empty file (0 bytes)", None,
                                "Rigaku hit words (8 bytes each)")
        self.n_words = size // 8
        if size % 8:
            self.close()
            raise XpcsFileError(
                path, f"truncated last word: {size % 8} bytes after the last whole word",
                f"word {self.n_words}", "a whole number of 8-byte words")
        for i in (0, self.n_words - 1):
            w = self._word(i)
            if w & _RESERVED:
                self.close()
                raise XpcsFileError(path, f"reserved bits set in {w:#018x}", f"word {i}",
                                    _EXPECTED_WORD)
        if self.n_words > 1 and not self._word(0) & COUNT_MASK:
            self.close()
            raise XpcsFileError(path, f"holds a count of 0 ({self._word(0):#018x})", "word 0",
                                "a hit of 1..4095 photons (a count of 0 only marks the last "
                                "frame)")
        first, last = self._frame(0), self._frame(self.n_words - 1)
        if last < first:
            self.close()
            raise XpcsFileError(
                path, f"frame numbers go backwards: the last word's frame {last} is "
                f"before the first's ({first})", f"word {self.n_words - 1}",
                "hit words in frame order")
        self.raw_frames = last + 1

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _word(self, i: int) -> int:
        self._fh.seek(8 * i)
        b = self._fh.read(8)
        if len(b) != 8:
            raise XpcsFileError(self.path, "shorter than when it was opened (truncated "
                                "while being read)", f"word {i}")
        return int.from_bytes(b, "little")

    def _frame(self, i: int) -> int:
        return word_frame(self._word(i))

    def lower_bound(self, frame: int) -> int:
        """Index of the first word whose frame is >= ``frame`` (binary search)."""
        if frame <= 0:
            return 0
        if frame >= self.raw_frames:
            return self.n_words
        hit = self._bounds.get(frame)
        if hit is not None:
            return hit
        lo = first_word_of_frame(self._frame, frame, 0, self.n_words)
        if len(self._bounds) > 4096:
            self._bounds.clear()
        self._bounds[frame] = lo
        return lo

    def count(self, a: int, b: int) -> int:
        if b <= a:
            return 0
        return self.lower_bound(b) - self.lower_bound(a)

    def edges(self, a: int, b: int, k: int) -> tuple[int, list[tuple[int, int]],
                                                     list[tuple[int, int]]]:
        """(words of frames ``[a, b)``, (frame, word) of their first and of their last
        ``k + 1``), for :func:`~xpcsviewer.io.raw.sparse.check_edges`."""
        i0, i1 = self.lower_bound(a), self.lower_bound(b)
        if i1 <= i0:
            return 0, [], []
        head = range(i0, min(i1, i0 + k + 1))
        tail = range(max(i0, i1 - k - 1), i1)
        fr = {i: int(f) for i, f in zip((*head, *tail), (
            *frame_field(self._words(head.start, head.stop)),
            *frame_field(self._words(tail.start, tail.stop))), strict=True)}
        return i1 - i0, [(fr[i], i) for i in head], [(fr[i], i) for i in tail]

    def _words(self, i0: int, i1: int) -> np.ndarray:
        out = np.empty(i1 - i0, dtype=WORD)
        self._fh.seek(8 * i0)
        got = self._fh.readinto(memoryview(out).cast("B"))
        if got != out.nbytes:
            raise XpcsFileError(self.path, "shorter than when it was opened (truncated "
                                "while being read)", f"word {i0 + got // 8}")
        return out

    def read(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frame, module pixel, count) of the hits of frames ``[a, b)``, checked."""
        if b <= a:
            i0 = i1 = 0
        else:
            i0, i1 = self.lower_bound(a), self.lower_bound(b)
        # one word either side too: the order is checked across the range's edges
        j0, j1 = max(0, i0 - 1), min(self.n_words, i1 + 1)
        if i1 <= i0:
            return (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint16))
        words = self._words(j0, j1)
        frame = frame_field(words).astype(np.int32)  # 24 bits
        check_frame_order(self.path, frame, j0)
        words = words[i0 - j0: i1 - j0]
        frame = frame[i0 - j0: i1 - j0]
        pixel = pixel_field(words).astype(np.int32)  # 21 bits
        count = count_field(words)
        fold_pixels(self.path, pixel, i0)
        return frame, pixel, count


class RigakuBin(SparseSource):
    """One Rigaku XSPA module file (512 x 1024 pixels), see the module notes.

    Parameters
    ----------
    path : str or Path
        The ``.bin`` file.
    shape : (int, int), optional
        Ignored: the module's shape is fixed (512 x 1024).
    begin, end, stride, avg : int
        Frame selection, as :class:`~xpcsviewer.io.raw.RawFrames`.

    Raises
    ------
    XpcsFileError
        Missing, empty or truncated file, reserved bits set, frames going backwards,
        pixel outside the module (the last two when the words are read).
    """

    layout = "rigaku"

    def __init__(self, path: str | Path, *, shape: tuple[int, int] | None = None,
                 begin: int = 0, end: int | None = -1, stride: int = 1,
                 avg: int = 1) -> None:
        self.path = Path(path)
        self._module: _ModuleFile | None = None
        self._module = _ModuleFile(self.path)
        self.layout_text = "APS Rigaku XSPA .bin photon list (one 512 x 1024 module)"
        self.dataset_path = None
        self.raw_frames = self._module.raw_frames
        self.frame_shape = MODULE_SHAPE
        self.count_dtype = np.dtype(np.uint16)
        self.raw_events = self._module.n_words
        self.frame_time = None
        self.files = (self.path,)
        self._select(begin, end, stride, avg)

    def _raw_count(self, a: int, b: int) -> int:
        return self._module.count(a, b)

    def _edge_hits(self, b: int, e: int, k: int) -> tuple[int, list, list]:
        n, head, tail = self._module.edges(b, e, k)

        def hit(f: int, i: int) -> tuple[int, str, str]:
            return f, f"word {i}", f"frame {f}"

        return n, [hit(*h) for h in head], [hit(*t) for t in tail]

    def _raw_range(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._module.read(a, b)

    def close(self) -> None:
        if getattr(self, "_module", None) is not None:
            self._module.close()


class Rigaku3M(SparseSource):
    """The six module files of a Rigaku 3M on one 1676 x 2100 canvas (module notes).

    Parameters
    ----------
    path : str or Path
        Any module file (``NAME.bin.00N`` or ``NAME.00N``) or their common stem
        (``NAME.bin``).
    shape : (int, int), optional
        Ignored: the canvas shape is fixed (1676 x 2100).
    begin, end, stride, avg : int
        Frame selection, as :class:`~xpcsviewer.io.raw.RawFrames`.

    Raises
    ------
    XpcsFileError
        A missing module file, modules with different frame counts, or any module
        error of :class:`RigakuBin`.
    """

    layout = "rigaku-3m"

    def __init__(self, path: str | Path, *, shape: tuple[int, int] | None = None,
                 begin: int = 0, end: int | None = -1, stride: int = 1,
                 avg: int = 1) -> None:
        self.path = Path(path)
        self._modules: list[_ModuleFile] = []
        m = _MODULE_RE.search(self.path.name)
        stem = self.path.name[: m.start()] if m else self.path.name
        files = [self.path.with_name(f"{stem}.00{k}") for k in range(6)]
        for f in files:
            if not f.exists():
                self.close()
                raise XpcsFileError(
                    f, "module file missing: a Rigaku 3M is six module files "
                    f"{stem}.000 ... {stem}.005", None, "all six module files")
        try:
            for f in files:
                self._modules.append(_ModuleFile(f))
        except XpcsFileError:
            self.close()
            raise
        counts = [mod.raw_frames for mod in self._modules]
        if len(set(counts)) > 1:
            self.close()
            # the longest module first: a stray word there is named by its own check
            RigakuBin(files[counts.index(max(counts))]).close()
            listed = ", ".join(f"{f.name}: {n}" for f, n in zip(files, counts, strict=True))
            raise XpcsFileError(self.path, f"modules have different frame counts ({listed})",
                                "frame field", "the same number of frames in all six modules")
        h, w = RIGAKU_3M_SHAPE
        # canvas offset of module file .00N
        self._offset = [0] * 6
        for k, suffix in enumerate(PLACEMENT):
            r0 = (k // 2) * (MODULE_SHAPE[0] + GAP_ROWS)
            c0 = (k % 2) * (MODULE_SHAPE[1] + GAP_COLS)
            self._offset[suffix] = r0 * w + c0
        self.layout_text = ("APS Rigaku 3M: six XSPA .bin module files on a 3 x 2 canvas "
                            f"({h} x {w} pixels with gaps)")
        self.dataset_path = None
        self.raw_frames = counts[0]
        self.frame_shape = RIGAKU_3M_SHAPE
        self.count_dtype = np.dtype(np.uint16)
        self.raw_events = sum(mod.n_words for mod in self._modules)
        self.frame_time = None
        self.files = tuple(files)
        self._select(begin, end, stride, avg)

    def _raw_count(self, a: int, b: int) -> int:
        return sum(mod.count(a, b) for mod in self._modules)

    def _edge_hits(self, b: int, e: int, k: int) -> tuple[int, list, list]:
        n, head, tail = 0, [], []
        for mod in self._modules:
            m, hd, tl = mod.edges(b, e, k)
            n += m
            for out, got in ((head, hd), (tail, tl)):
                out += [(f, f"{mod.path.name} word {i}", f"frame {f}") for f, i in got]
        head.sort(key=lambda h: h[0])
        tail.sort(key=lambda h: h[0])
        return n, head[: k + 1], tail[-(k + 1):]

    def _raw_range(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w = RIGAKU_3M_SHAPE[1]
        parts = []
        for k, mod in enumerate(self._modules):
            fr, px, c = mod.read(a, b)
            if fr.size:
                r, col = np.divmod(px, MODULE_SHAPE[1])
                parts.append((fr, r * w + col + self._offset[k], c))
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint16)
        frame = np.concatenate([p[0] for p in parts])
        pixel = np.concatenate([p[1] for p in parts])
        count = np.concatenate([p[2] for p in parts])
        order = np.argsort(frame, kind="stable")
        return frame[order], pixel[order], count[order]

    def close(self) -> None:
        for mod in getattr(self, "_modules", ()):
            mod.close()
