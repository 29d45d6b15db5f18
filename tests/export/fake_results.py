"""Small in-memory result files with known physics, for the export and g2/diffusion/two-time tests.

A local stand-in used only by tests, so these tests do not depend on the reader and
the demo writer landing first. Each result is also written to disk with
``xpcsviewer.io.results.writer.write_result`` (when it works) so ``path`` is a real file.

Physics: g2(q, tau) = 1 + beta exp(-2 D q^2 tau) with D_TRUE in A^2/s; two-time maps
C(t1, t2) = 1 + beta exp(-2 D q^2 |t1 - t2|) plus noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xpcsviewer.model.result import Multitau, QMap, Twotime, XpcsResult

D_TRUE = 1.0e5  # A^2/s
BETA = 0.25
Q_BINS = np.array([0.003, 0.004, 0.005, 0.0065, 0.008, 0.010])  # 1/A


def multitau_delays(n_levels: int = 10, per_level: int = 8) -> np.ndarray:
    """Multi-tau delays in frames: 1..8, then 8 per level with spacing 2^level."""
    d = list(range(1, per_level + 1))
    for lev in range(1, n_levels):
        step = 2**lev
        start = d[-1]
        d.extend(start + step * (k + 1) for k in range(per_level // 2))
    return np.array(d, dtype=np.int64)


def make_qmap(shape=(64, 64), n_dyn: int = 6, n_sta: int = 24) -> QMap:
    """Radial q bins around the detector centre (phi: one sector)."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    bcx, bcy = w / 2.0, h / 2.0
    r = np.hypot(yy - bcy, xx - bcx)
    rmin, rmax = 4.0, min(h, w) / 2.0 - 1
    edges_d = np.linspace(rmin, rmax, n_dyn + 1)
    edges_s = np.linspace(rmin, rmax, n_sta + 1)
    dyn = np.digitize(r, edges_d)
    dyn[(r < rmin) | (r >= rmax)] = 0
    sta = np.digitize(r, edges_s)
    sta[(r < rmin) | (r >= rmax)] = 0
    q_s = np.linspace(Q_BINS[0], Q_BINS[-1], n_sta)
    return QMap(
        dynamic_roi_map=dyn.astype(np.int64),
        static_roi_map=sta.astype(np.int64),
        mask=np.ones(shape, bool),
        dynamic_v_list_dim0=Q_BINS[:n_dyn].copy(),
        dynamic_v_list_dim1=np.array([0.0]),
        static_v_list_dim0=q_s,
        static_v_list_dim1=np.array([0.0]),
        dynamic_index_mapping=np.arange(n_dyn),
        static_index_mapping=np.arange(n_sta),
        dynamic_num_pts=(n_dyn, 1),
        static_num_pts=(n_sta, 1),
        beam_center_x=bcx,
        beam_center_y=bcy,
        detector_distance=5.0,
        pixel_size=75e-6,
        energy_kev=10.0,
    )


def c2_map(
    n: int, t0: float, q: float, rng, beta: float = BETA, noise: float = 0.01
) -> np.ndarray:
    """Symmetric (n, n) two-time map of Brownian motion with noise."""
    t = np.arange(n) * t0
    c = 1.0 + beta * np.exp(-2.0 * D_TRUE * q**2 * np.abs(t[:, None] - t[None, :]))
    eps = rng.normal(0, noise, (n, n))
    return c + np.triu(eps) + np.triu(eps, 1).T


def make_result(
    path: Path,
    seed: int = 0,
    kind: str = "both",
    n_c2: int = 120,
    beta: float = BETA,
    write: bool = True,
) -> XpcsResult:
    """One result file (``kind``: "multitau", "twotime" or "both") at ``path``."""
    rng = np.random.default_rng(seed)
    qm = make_qmap()
    t0 = 1e-3
    mt = None
    if kind in ("multitau", "both"):
        d = multitau_delays()
        tau = d * t0
        q = qm.dynamic_q
        g2 = 1.0 + beta * np.exp(-2.0 * D_TRUE * q[None, :] ** 2 * tau[:, None])
        err = np.full(g2.shape, 0.004)
        g2 = g2 + rng.normal(0, 0.004, g2.shape)
        g2[-3:, 0] = 0.0  # missing points: no photons at the longest delays of bin 1
        err[-3:, 0] = 0.0
        valid = ~((g2 == 0) & (err == 0))
        mt = Multitau(
            delay_frames=d, tau=tau, g2=g2, g2_err=err, valid=valid, t0_eff=t0
        )
    tt = None
    maps = None
    if kind in ("twotime", "both"):
        bins = np.array([1, 3, 5])
        maps = [c2_map(n_c2, t0, qm.dynamic_q[b - 1], rng, beta) for b in bins]
        full = np.array([[np.diagonal(m, k).mean() for k in range(n_c2)] for m in maps])
        L = n_c2 // 5
        seg = np.array(
            [
                [
                    [
                        np.diagonal(
                            m[s * L : (s + 1) * L, s * L : (s + 1) * L], k
                        ).mean()
                        for k in range(L)
                    ]
                    for s in range(5)
                ]
                for m in maps
            ]
        )
        tt = Twotime(
            processed_bins=bins,
            map_names=[f"c2_{i + 1:05d}" for i in range(3)],
            n_frames=n_c2,
            t0=t0,
            g2_full=full,
            g2_segments=seg,
        )
    n_s = qm.n_static
    s1 = 10.0 * (qm.static_q / 0.003) ** -3
    segs = s1[None, :] * (1 + 0.01 * np.arange(5))[:, None]
    frames = np.arange(500.0)
    itime = np.stack([frames, 1.0 + 0.05 * np.sin(frames / 20.0)])
    analysis = tuple(
        a for a, on in (("Multitau", mt is not None), ("Twotime", tt is not None)) if on
    )
    res = XpcsResult(
        path=Path(path),
        analysis_type=analysis,
        layout="nexus",
        qmap=qm,
        frame_time=t0,
        count_time=t0,
        start_time="2026-01-01T00:00:00",
        saxs_1d=s1,
        saxs_1d_segments=segs,
        intensity_vs_time=itime,
        multitau=mt,
        twotime=tt,
        sample={"D": (D_TRUE, "A^2/s"), "contrast": (beta, "")},
    )
    assert n_s == s1.size
    if write:
        try:
            from xpcsviewer.io.results.writer import write_result

            yy, xx = np.mgrid[0:64, 0:64]
            img = 1.0 / (1.0 + np.hypot(yy - 32, xx - 32)) ** 2
            write_result(path, res, saxs_2d=img, c2_maps=maps, overwrite=True)
        except (
            Exception
        ):  # the writer may be mid-change; the in-memory result is enough
            Path(path).write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    return res


class FakeC2View:
    """What ``io.read_c2`` returns: a strided view of one map with its time step."""

    def __init__(
        self,
        c2: np.ndarray,
        t0: float,
        stride: int = 1,
        label: str = "",
        dq_bin: int = 1,
    ):
        self.c2 = c2
        self.stride = stride
        self.t0 = t0 * stride
        self.label = label
        self.dq_bin = dq_bin


def fake_read_c2(
    result: XpcsResult,
    index: int,
    max_size: int = 1024,
    correct_diagonal: bool = False,
    seed: int = 0,
) -> FakeC2View:
    """Stand-in for ``io.read_c2`` built from the known physics (same shape rules)."""
    tt = result.twotime
    n = tt.n_frames
    stride = int(np.ceil(n / max_size)) if n > max_size else 1
    q = result.qmap.dynamic_q[tt.processed_bins[index] - 1]
    c = c2_map(n, tt.t0, q, np.random.default_rng(seed))[::stride, ::stride]
    if correct_diagonal:
        c = c.copy()
        m = c.shape[0]
        for i in range(m):
            nb = [c[i, i + 1]] if i + 1 < m else []
            nb += [c[i - 1, i]] if i > 0 else []
            c[i, i] = np.mean(nb)
    return FakeC2View(c, tt.t0, stride, f"q={q:.5f}", int(tt.processed_bins[index]))


def make_big_result(path: Path, reps: int = 40, n_big: int = 4000) -> Path:
    """A "both" file with 6*reps g2 curves and one n_big x n_big two-time map (real writer).

    Column j has q = Q_BINS[j % 6]; the map is 1 + 0.2 exp(-2 |t1 - t2| / 0.5 s).
    """
    from dataclasses import replace

    from xpcsviewer.io import write_result

    base = make_result(path, seed=0, kind="multitau", write=False)
    rng = np.random.default_rng(0)
    mt = base.multitau
    nb = 6 * reps
    qm0 = make_qmap(n_dyn=6)
    roi = np.zeros(qm0.shape, dtype=np.int64)
    inside = np.flatnonzero(qm0.dynamic_roi_map.ravel() > 0)
    roi.ravel()[inside] = 1 + np.arange(inside.size) % nb
    qm = replace(
        qm0,
        dynamic_roi_map=roi,
        dynamic_v_list_dim0=np.tile(Q_BINS, reps),
        dynamic_index_mapping=np.arange(nb),
        dynamic_num_pts=(nb, 1),
    )
    g2 = np.tile(mt.g2, (1, reps)) + rng.normal(0, 0.004, (mt.g2.shape[0], nb))
    mt2 = Multitau(
        delay_frames=mt.delay_frames,
        tau=mt.tau,
        g2=g2,
        g2_err=np.full(g2.shape, 0.004),
        valid=np.ones(g2.shape, bool),
        t0_eff=mt.t0_eff,
    )
    t = np.arange(n_big) * 1e-3

    def maps():
        lag = np.abs(t[:, None] - t[None, :]).astype(np.float32)
        yield (1.0 + 0.2 * np.exp(-2.0 * lag / 0.5)).astype(np.float32)

    tt = Twotime(
        processed_bins=np.array([1]), map_names=["c2_00001"], n_frames=n_big, t0=1e-3
    )
    res = replace(
        base,
        path=Path(path),
        analysis_type=("Multitau", "Twotime"),
        qmap=qm,
        multitau=mt2,
        twotime=tt,
    )
    write_result(path, res, c2_maps=maps, overwrite=True)
    return Path(path)
