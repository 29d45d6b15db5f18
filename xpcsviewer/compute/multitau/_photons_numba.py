"""numba kernels of the photon multi-tau correlator (``multitau_sparse``).

Imported only when a sparse job runs (importing numba costs ~0.5 s); compiled once per
machine into numba's disk cache.

Per block of frames the hits are put in pixel order (a counting sort, each thread on its
own run of hits: stable, so each pixel's hits stay in frame order), then each thread takes
a band of pixels and carries each pixel through every level: at level L the pixel's hits
are paired with each other and with the window of its last B frames of that level (kept
from the blocks before), and consecutive pairs of level-L frames give the pixel's hits at
level L+1.
The cost is the hits of each level (at most pixels x frames / 2^L) plus a few operations
per pixel carried and level per block (a block carries the pixels with hits and those
whose frame waiting for its pair is paired in the block); no dense frame is ever formed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["count_hits", "levels_update", "scatter_hits"]


@njit(cache=True, parallel=True, nogil=True)
def count_hits(pixel, lut, chunks, cnt):  # pragma: no cover - compiled
    """cnt[c, q] = hits of correlated pixel q (``lut``: detector pixel -> q or -1) among
    the hits ``chunks[c]:chunks[c + 1]``: each thread reads its own run of hits once."""
    for c in prange(chunks.shape[0] - 1):
        for e in range(chunks[c], chunks[c + 1]):
            q = lut[pixel[e]]
            if q >= 0:
                cnt[c, q] += 1


@njit(cache=True, parallel=True, nogil=True)
def scatter_hits(frame, pixel, value, scale, f0, lut, chunks, pos, out_t,
                 out_v):  # pragma: no cover - compiled
    """Hits into pixel order (stable: each pixel's hits stay in frame order), times
    relative to ``f0``; ``scale`` per frame (relative to f0), or empty. Chunked like
    :func:`count_hits`; ``pos[c, q]``: where chunk c's first hit of pixel q goes (after
    the pixel's hits of the chunks before), advanced as hits are written."""
    use_scale = scale.shape[0] > 0
    for c in prange(chunks.shape[0] - 1):
        for e in range(chunks[c], chunks[c + 1]):
            q = lut[pixel[e]]
            if q < 0:
                continue
            k = pos[c, q]
            t = frame[e] - f0
            out_t[k] = t
            v = np.float64(value[e])
            if use_scale:
                v = v * scale[t]
            out_v[k] = v
            pos[c, q] = k + 1


@njit(cache=True, nogil=True, inline="always")
def _read(win, last, q, lvl, f):
    """The value of level-``lvl`` frame ``f`` of pixel q (0 without a hit there): the
    window holds frames ``(last - B, last]`` at slot ``f % B``; later frames have no hit."""
    buf = win.shape[2]
    lt = last[q, lvl]
    if f < 0 or f > lt or f <= lt - buf:
        return 0.0
    return np.float64(win[q, lvl, f % buf])


@njit(cache=True, nogil=True, inline="always")
def _level(q, lvl, tt, vv, cc, src, na, nc, win, last, sp, first, tot0, cprev, cnew,
           xmin, nl, m):
    """One level of one pixel: pairs, window, first frames, totals; returns (hits,
    candidates) emitted into row ``1 - src`` of (tt, vv, cc) for level lvl + 1.

    ``cc[src, :nc]``: the candidates, the hits that may have a partner: those whose
    previous hit is within B frames (the first hit always, for the window). A hit whose
    previous hit is farther has no partner at all, so the pairs are sought for candidates
    only (at sparse levels a few per cent of the hits; the search is what costs).
    """
    buf = win.shape[2]
    dst = 1 - src
    lt = last[q, lvl]  # newest frame with a hit before this block (< cprev[lvl])
    nxt = lvl + 1 < nl
    # pairs: a hit's partners are the hits before it within B frames (this list, then
    # the window of earlier blocks for the first hits)
    for c in range(nc):
        i = cc[src, c]
        t = tt[src, i]
        v = vv[src, i]
        j = i - 1
        near = True
        while j >= 0:
            dt = t - tt[src, j]
            if dt > buf:
                near = False
                break
            if dt >= xmin:
                # sp rows: level 0 x = 1..m in row 0; x = m+1..2m in row lvl + 1
                if dt <= m:
                    sp[q, 0, dt - 1] += v * vv[src, j]
                else:
                    sp[q, lvl + 1, dt - m - 1] += v * vv[src, j]
            j -= 1
        if near and lt >= 0:
            fhi = t - xmin
            if fhi > lt:
                fhi = lt
            flo = t - buf
            if flo < lt - buf + 1:
                flo = lt - buf + 1
            if flo < 0:
                flo = 0
            for f in range(fhi, flo - 1, -1):
                w = np.float64(win[q, lvl, f % buf])
                if w != 0.0:
                    x = t - f
                    if x <= m:
                        sp[q, 0, x - 1] += v * w
                    else:
                        sp[q, lvl + 1, x - m - 1] += v * w
    if cprev[lvl] < buf:
        # the first B frames: level 0 all (rows 0, 1), a level above only its frames
        # m..B-1 (row lvl + 1); its frames below m are pairs of the level below's
        for i in range(na):
            t = tt[src, i]
            if t < m:
                if lvl == 0:
                    first[q, 0, t] = vv[src, i]
            elif t < buf:
                first[q, lvl + 1, t - m] = vv[src, i]
    if lvl == 0:
        acc = 0.0
        for i in range(na):
            acc += vv[src, i]
        tot0[q] += acc
    nout = 0
    nco = 0
    if nxt:
        cnext = cnew[lvl + 1]
        # coarse hits: consecutive level-L frames 2k, 2k+1 -> frame k of level L+1;
        # only complete pairs (k < cnext): at most the last hit waits for its partner
        o = -1
        last_k = -(1 << 62)
        cur = 0.0
        if (cprev[lvl] & 1) == 1 and lt == cprev[lvl] - 1:
            o = 0
            last_k = lt >> 1
            cur = np.float64(win[q, lvl, lt % buf])
            tt[dst, 0] = last_k
            vv[dst, 0] = 0.5 * cur
        ncut = na
        if na > 0 and (tt[src, na - 1] >> 1) >= cnext:
            ncut = na - 1
        # branch-free: the group's running sum stays in a register and its slot is
        # rewritten each step; a new group is a candidate of the next level when the
        # group before it is within B frames (slot 0 of cc: the first group, always)
        nco = 1
        for i in range(ncut):
            k = tt[src, i] >> 1
            v = vv[src, i]
            new = k != last_k
            o += 1 if new else 0
            cur = v if new else cur + v
            tt[dst, o] = k
            vv[dst, o] = 0.5 * cur
            cc[dst, nco] = o
            nco += 1 if (new and k - last_k <= buf) else 0
            last_k = k
        nout = o + 1
        cc[dst, 0] = 0
        if nout == 0:
            nco = 0
        elif nco > 1 and cc[dst, 1] == 0:
            # the first group was flagged too: keep it once
            for c in range(1, nco - 1):
                cc[dst, c] = cc[dst, c + 1]
            nco -= 1
    if na > 0:
        # the window moves to (newest - B, newest]: frames after the old newest hit
        # start empty, then this block's hits among them are written
        nw = tt[src, na - 1]
        lo = lt + 1
        if lo < nw - buf + 1:
            lo = nw - buf + 1
        for f in range(lo, nw + 1):
            win[q, lvl, f % buf] = 0
        i = na - 1
        while i >= 0 and tt[src, i] > nw - buf:
            win[q, lvl, tt[src, i] % buf] = vv[src, i]
            i -= 1
        last[q, lvl] = nw
    return nout, nco


@njit(cache=True, parallel=True, nogil=True)
def levels_update(walk, off, ht, hv, f0, bands, win, last, sp, first, tot0, cprev, cnew,
                  m, maxn, pend):  # pragma: no cover - compiled
    """Carry the hits of one block through all levels (see the module notes), for the
    pixels of ``walk`` only.

    walk (W,): the pixels to carry: those with hits in the block, and those with a frame
    waiting for its pair at a level that gets new frames in the block (``pend``); any
    other pixel's state cannot change;
    off (P+1,), ht/hv: pixel-ordered hits (frame - f0, value); bands: edges in ``walk``,
    one band per task; state: ``win`` (P, NL, B), ``last`` (P, NL), ``first`` and
    ``sp`` (P, NL + 1, m); cprev/cnew (NL,): frames of each level before/after the block.
    ``pend[q]`` (every walked pixel): bit L set when its newest level-L hit is level-L
    frame cnew[L] - 1 with cnew[L] odd (the frame that waits for its pair).
    """
    nl = win.shape[1]
    buf = win.shape[2]
    for b in prange(bands.shape[0] - 1):
        tt = np.empty((2, maxn + 2), dtype=np.int64)
        vv = np.empty((2, maxn + 2), dtype=np.float64)
        cc = np.empty((2, maxn + 3), dtype=np.int64)
        for wi in range(bands[b], bands[b + 1]):
            q = walk[wi]
            # level-0 hits of this pixel, hits of one frame merged (values add), and the
            # candidates: the first hit and every hit within B frames of the one before
            na = 0
            nc = 1
            cc[0, 0] = 0
            for e in range(off[q], off[q + 1]):
                t = np.int64(ht[e]) + f0  # int64 also where f0 passes 2^31
                if na > 0 and tt[0, na - 1] == t:
                    vv[0, na - 1] += hv[e]
                else:
                    tt[0, na] = t
                    vv[0, na] = hv[e]
                    if na > 0:
                        cc[0, nc] = na
                        nc += 1 if t - tt[0, na - 1] <= buf else 0
                    na += 1
            if na == 0:
                nc = 0
            src = 0
            for lvl in range(nl):
                if cnew[lvl] == cprev[lvl]:
                    break  # no new frame at this level or above
                xmin = 1 if lvl == 0 else m + 1
                if na == 0 and not ((cprev[lvl] & 1) == 1 and lvl + 1 < nl
                                    and cnew[lvl + 1] > cprev[lvl + 1]):
                    # nothing new here and no pending frame to pair: levels above get
                    # nothing from this pixel either, unless they have a pending frame
                    nb = 0
                    nc = 0
                else:
                    nb, nc = _level(q, lvl, tt, vv, cc, src, na, nc, win, last, sp, first,
                                    tot0, cprev, cnew, xmin, nl, m)
                src = 1 - src
                na = nb
            wait = 0
            for lvl in range(nl):
                c = cnew[lvl]
                if (c & 1) == 1 and last[q, lvl] == c - 1:
                    wait |= 1 << lvl
            pend[q] = wait


@njit(cache=True, parallel=True, nogil=True)
def hit_sums(frame, pixel, value, r0, group, sid, image, static, tot, segrow, per_task,
             pbands, echunks):  # pragma: no cover - compiled
    """The scattering sums of a block of hits: ``image[pixel] += value``; for pixels in a
    static bin (``sid`` >= 0), ``tot[row] += value`` and ``static[task or 0,
    segrow[row], sid] += value`` with ``row = frame // group - r0``. Tasks: the image by
    detector-pixel bands (``pbands``), the rest by runs of hits that start on a new row
    (``echunks``); ``per_task``: each run has its own static slab (rows shared by runs, as
    segments are), else one slab whose rows the runs do not share."""
    n_pb = pbands.shape[0] - 1
    n_ec = echunks.shape[0] - 1
    for task in prange(n_pb + n_ec):
        if task < n_pb:
            lo = pbands[task]
            hi = pbands[task + 1]
            for e in range(pixel.shape[0]):
                px = pixel[e]
                if px >= lo and px < hi:
                    image[px] += np.float64(value[e])
        else:
            c = task - n_pb
            slab = c if per_task else 0
            for e in range(echunks[c], echunks[c + 1]):
                s = sid[pixel[e]]
                if s >= 0:
                    row = frame[e] // group - r0
                    v = np.float64(value[e])
                    tot[row] += v
                    static[slab, segrow[row], s] += v


@njit(cache=True, nogil=True)
def window_hist(win, last, lvl, count, hist):  # pragma: no cover - compiled
    """hist[j, q] = the value of frame count - B + j of pixel q at level ``lvl`` (frames
    without a hit stay 0)."""
    buf = win.shape[2]
    for q in range(win.shape[0]):
        for j in range(buf):
            hist[j, q] = _read(win, last, q, lvl, count - buf + j)


@njit(cache=True, nogil=True)
def window_frame(win, last, lvl, t, out):  # pragma: no cover - compiled
    """out[q] = the value of level-``lvl`` frame ``t`` of pixel q (0 without a hit there)."""
    for q in range(win.shape[0]):
        out[q] = _read(win, last, q, lvl, t)


@njit(cache=True, nogil=True, inline="always")
def _first_frames(first, q, lvl, count, out):
    """out = the first B frames of pixel q at level ``lvl``, given ``out`` holding them
    at level lvl - 1 (lvl > 0): frames below m are pairs of the level below's frames,
    the others stored; frames not yet formed (>= count) are 0."""
    m = first.shape[2]
    buf = out.shape[0]
    if lvl == 0:
        for t in range(m):
            out[t] = first[q, 0, t]
    else:
        for t in range(m):
            out[t] = 0.5 * (out[2 * t] + out[2 * t + 1])
    for t in range(m, buf):
        out[t] = first[q, lvl + 1, t - m]
    for t in range(count if count > 0 else 0, buf):
        out[t] = 0.0


@njit(cache=True, parallel=True, nogil=True)
def bin_sums(win, last, sp, first, tot0, counts, row_lvl, row_x, sid, did, d_count, bands,
             s_g2, s_ip, s_if, dsum, dss):  # pragma: no cover - compiled
    """The bin sums of every reported delay straight from the photon state (what
    ``multitau_pixels.finalize_kernel`` computes from the dense state, level by level):
    for row r (level ``row_lvl[r]``, delay ``row_x[r]`` in that level's frames), per pixel
    G2 = sumprod / (n - x), IP = (sum - last x frames) / (n - x), IF = (sum - first x
    frames) / (n - x), summed into static bins; the per-pixel G2 / (IP IF) summed and, in
    a second pass about each bin's mean, its squared deviations summed into dynamic bins.
    A level's sum is derived on the way up, ``(sum_{L-1} - [n_{L-1} odd] a(n_{L-1} - 1))
    / 2``. Pixel by pixel, every level at once (a pixel's state is contiguous), over
    pixel bands in parallel (each band sums into its own slab; ``s_*``, ``dsum``, ``dss``
    are (bands, rows, bins))."""
    buf = win.shape[2]
    nl = win.shape[1]
    m = sp.shape[2]
    nr = row_lvl.shape[0]
    nb = bands.shape[0] - 1
    for sweep in range(2):
        if sweep == 1:
            # the bins' means for the deviations: every band's sums
            for b in range(1, nb):
                for r in range(nr):
                    for d in range(dsum.shape[2]):
                        dsum[0, r, d] += dsum[b, r, d]
                        dsum[b, r, d] = 0.0
        for b in prange(nb):
            lastx = np.zeros(buf + 1)
            fst_l = np.zeros(buf)
            for q in range(bands[b], bands[b + 1]):
                d = did[q]
                st = sid[q]
                tot = tot0[q]
                r = 0
                for lvl in range(nl):
                    if lvl > 0:
                        c = counts[lvl - 1]
                        if (c & 1) == 1:
                            tot -= _read(win, last, q, lvl - 1, c - 1)
                        tot = 0.5 * tot
                    _first_frames(first, q, lvl, counts[lvl], fst_l)
                    if r >= nr or row_lvl[r] != lvl:
                        continue
                    count = counts[lvl]
                    for x in range(buf + 1):
                        lastx[x] = 0.0
                    for x in range(1, buf + 1):
                        # frame count - x is among the last x' frames for x' >= x
                        lastx[x] = lastx[x - 1] + _read(win, last, q, lvl, count - x)
                    fst = 0.0
                    j = 0
                    while r < nr and row_lvl[r] == lvl:
                        x = row_x[r]
                        while j < x:
                            fst += fst_l[j]
                            j += 1
                        norm = float(max(count - x, 1))
                        spx = sp[q, 0, x - 1] if x <= m else sp[q, lvl + 1, x - m - 1]
                        g = spx / norm
                        ip = (tot - lastx[x]) / norm
                        if_ = (tot - fst) / norm
                        den = ip * if_
                        pk = g / (den if den != 0.0 else 1e8)
                        if sweep == 0:
                            s_g2[b, r, st] += g
                            s_ip[b, r, st] += ip
                            s_if[b, r, st] += if_
                            dsum[b, r, d] += pk
                        else:
                            cd = d_count[d]
                            dev = pk - dsum[0, r, d] / (cd if cd > 0 else 1.0)
                            dss[b, r, d] += dev * dev
                        r += 1
