"""Averaging repeat measurements: exact errors, outliers, q-map checks, memory."""

from __future__ import annotations

import gc
import shutil
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.averaging import PointAccumulator, baseline_value, robust_z
from xpcsviewer.io import read_g2_stack_delay, read_result, read_saxs_2d, write_result
from xpcsviewer.io.outputs import OutputRefusedError
from xpcsviewer.jobs.average import (
    AverageOptions,
    IncompatibleFilesError,
    NoFilesAcceptedError,
    UnreadableFilesError,
    average_files,
    screen_files,
)
from xpcsviewer.model.result import Multitau, QMap, XpcsResult
from xpcsviewer.progress import Cancelled, CancelToken

H, W = 12, 16
ND, NS = 3, 6
DELAYS = np.array([1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16], dtype=np.int64)


def _qmap(shift: int = 0) -> QMap:
    yy, xx = np.mgrid[:H, :W]
    r = np.hypot(yy - 5.5, xx - 7.5)
    dyn = np.clip((r // 3).astype(int) + 1 + shift, 0, ND)
    dyn[dyn > ND] = 0
    sta = np.clip((r // 1.5).astype(int) + 1, 0, NS)
    sta[sta > NS] = 0
    sta[dyn == 0] = 0
    return QMap(
        dynamic_roi_map=dyn,
        static_roi_map=sta,
        mask=np.ones((H, W), bool),
        dynamic_v_list_dim0=np.linspace(0.001, 0.003, ND),
        dynamic_v_list_dim1=np.array([0.0]),
        static_v_list_dim0=np.linspace(0.001, 0.003, NS),
        static_v_list_dim1=np.array([0.0]),
        dynamic_index_mapping=np.arange(ND),
        static_index_mapping=np.arange(NS),
        dynamic_num_pts=(ND, 1),
        static_num_pts=(NS, 1),
        energy_kev=10.0,
    )


def _g2(tau_scale: float = 1.0, baseline: float = 1.0, rng=None):
    tau = DELAYS * 1e-3
    g2 = baseline + 0.2 * np.exp(
        -2 * tau[:, None] / (0.004 * tau_scale * np.arange(1, ND + 1))
    )
    err = np.full_like(g2, 0.01) * (1 + np.arange(ND))
    if rng is not None:
        g2 = g2 + rng.normal(0, 0.002, g2.shape)
        err = err * rng.uniform(0.8, 1.2, g2.shape)
    return g2, err


def write_file(
    path: Path,
    *,
    g2=None,
    err=None,
    intensity=1.0,
    qshift=0,
    stack=False,
    partial=True,
    image_scale=1.0,
    rng=None,
) -> Path:
    """A small multitau result file with known arrays (float32 on disk)."""
    if g2 is None:
        g2, err = _g2(rng=rng)
    mt = Multitau(
        delay_frames=DELAYS,
        tau=DELAYS * 1e-3,
        g2=g2,
        g2_err=err,
        valid=np.ones(g2.shape, bool),
        t0_eff=1e-3,
    )
    if partial:
        mt.g2_partial = np.stack([g2 * 1.01, g2])
        mt.g2_partial_err = np.stack([err * 1.4, err])
        mt.g2_partial_labels = np.array([500, 1000])
    res = XpcsResult(
        path=path,
        analysis_type=("Multitau",),
        layout="nexus",
        qmap=_qmap(qshift),
        frame_time=1e-3,
        count_time=1e-3,
        start_time=None,
        saxs_1d=intensity * np.linspace(2.0, 1.0, NS),
        saxs_1d_segments=None,
        intensity_vs_time=np.vstack([np.arange(20.0), np.full(20, intensity)]),
        multitau=mt,
    )
    img = image_scale * np.arange(H * W, dtype=float).reshape(H, W) / 7.0
    g2s = None
    if stack:
        base = np.arange(H * W, dtype=float).reshape(H, W) + 1
        g2s = np.stack(
            [
                np.stack([base * (k + 1) * image_scale, base, base + k])
                for k in range(len(DELAYS))
            ]
        )
    write_result(path, res, saxs_2d=img, g2_stack=g2s)
    return path


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


# ----------------------------------------------------------------------------- unit
@pytest.mark.parametrize("method", ["weighted", "sem"])
def test_point_accumulator_matches_numpy_reference(method):
    rng = np.random.default_rng(1)
    n, shape = 7, (5, 4)
    xs = rng.normal(1.0, 0.1, (n, *shape))
    es = rng.uniform(0.01, 0.1, (n, *shape))
    valid = rng.random((n, *shape)) > 0.2
    valid[:, 0, 0] = False  # a point no file has
    valid[1:, 0, 1] = False  # a point only file 0 has
    acc = PointAccumulator(shape, method)
    for x, e, v in zip(xs, es, valid, strict=True):
        acc.add(x, e, v)
    mean, err, cnt = acc.result()
    for i in range(shape[0]):
        for j in range(shape[1]):
            sel = valid[:, i, j]
            assert cnt[i, j] == sel.sum()
            if not sel.any():
                assert mean[i, j] == 0 and err[i, j] == 0
                continue
            x, e = xs[sel, i, j], es[sel, i, j]
            if method == "weighted":
                w = 1 / e**2
                ref_m, ref_e = np.sum(w * x) / np.sum(w), 1 / np.sqrt(np.sum(w))
            elif len(x) > 1:
                ref_m, ref_e = x.mean(), x.std(ddof=1) / np.sqrt(len(x))
            else:
                ref_m, ref_e = x[0], e[0]
            assert mean[i, j] == pytest.approx(ref_m, rel=1e-12)
            assert err[i, j] == pytest.approx(ref_e, rel=1e-10)


def test_baseline_and_robust_z():
    g2 = np.ones((10, 2))
    g2[-3:, 1] = [1.1, 1.2, 0.0]
    valid = np.ones_like(g2, bool)
    valid[-1, 1] = False
    assert baseline_value(g2, valid, 1, 3) == pytest.approx(1.15)
    assert np.isnan(baseline_value(g2, np.zeros_like(valid), 0, 3))
    with pytest.raises(ValueError, match="out of range"):
        baseline_value(g2, valid, 5, 3)
    v = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    z = robust_z(v)
    mad = np.median(np.abs(v - 3.0))
    assert z == pytest.approx(np.abs(v - 3.0) / (1.4826 * mad))
    same = robust_z(np.array([2.0, 2.0, 2.0, 2.5]))
    assert same[:3].tolist() == [0, 0, 0] and same[3] > 1e6


# ------------------------------------------------------------------ end to end
@pytest.mark.parametrize("method", ["weighted", "sem"])
def test_identical_files_same_data_errors_divided_as_stated(tmp_path, method):
    n = 4
    paths = [write_file(tmp_path / f"r{i}_results.hdf", stack=True) for i in range(n)]
    src = read_result(paths[0])
    out = tmp_path / "avg.hdf"
    out = tmp_path / "new_folder" / "avg.hdf"  # the folder is created
    summary = average_files(paths, out, AverageOptions(error_method=method))
    assert summary.accepted == [str(p) for p in paths] and summary.rejected == []
    assert {"g2", "g2_partial", "saxs_2d", "g2_stack"} <= set(summary.fields)
    res = read_result(out)
    mt, m0 = res.multitau, src.multitau
    np.testing.assert_allclose(res.multitau.g2, m0.g2, rtol=1e-6)
    if method == "weighted":
        # sum of n equal weights 1/s^2: err = s / sqrt(n)
        np.testing.assert_allclose(mt.g2_err, f32(m0.g2_err / np.sqrt(n)), rtol=1e-6)
        np.testing.assert_allclose(
            mt.g2_partial_err, f32(m0.g2_partial_err / np.sqrt(n)), rtol=1e-6
        )
    else:
        # identical values have zero spread across files
        assert np.all(mt.g2_err == 0) and np.all(mt.valid)
    np.testing.assert_allclose(mt.g2_partial, m0.g2_partial, rtol=1e-6)
    np.testing.assert_array_equal(mt.g2_partial_labels, m0.g2_partial_labels)
    np.testing.assert_allclose(res.saxs_1d, src.saxs_1d, rtol=1e-6)
    np.testing.assert_allclose(read_saxs_2d(out), read_saxs_2d(paths[0]), rtol=1e-6)
    for k in (0, len(DELAYS) - 1):
        for a, b in zip(
            read_g2_stack_delay(out, k), read_g2_stack_delay(paths[0], k), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    with h5py.File(out, "r") as f:
        assert f["entry/average/error_method"][()].decode() == method
        assert int(f["entry/average/n_files"][()]) == n
        # where the upstream averaging toolbox records its inputs
        assert [x.decode() for x in f["xpcs/average/file_list"][()]] == list(
            map(str, paths)
        )
    # inputs untouched
    np.testing.assert_array_equal(read_result(paths[0]).multitau.g2, m0.g2)


@pytest.mark.parametrize("method", ["weighted", "sem"])
def test_different_files_match_formulas(tmp_path, method):
    rng = np.random.default_rng(3)
    curves = [_g2(rng=rng) for _ in range(5)]
    # one missing point (g2 == 0 and err == 0) in file 2: skipped, not averaged as 0
    curves[2][0][3, 1] = curves[2][1][3, 1] = 0.0
    paths = [
        write_file(
            tmp_path / f"r{i}.hdf",
            g2=g,
            err=e,
            intensity=1 + 0.1 * i,
            image_scale=1 + i,
        )
        for i, (g, e) in enumerate(curves)
    ]
    out = tmp_path / "avg.hdf"
    average_files(paths, out, AverageOptions(error_method=method))
    res = read_result(out).multitau
    xs = np.stack([f32(c[0]) for c in curves])
    es = np.stack([f32(c[1]) for c in curves])
    ok = ~((xs == 0) & (es == 0))
    if method == "weighted":
        w = np.where(ok, 1 / np.where(ok, es, 1) ** 2, 0)
        ref = (w * xs).sum(0) / w.sum(0)
        ref_err = 1 / np.sqrt(w.sum(0))
    else:
        xm = np.where(ok, xs, np.nan)
        ref = np.nanmean(xm, 0)
        ref_err = np.nanstd(xm, 0, ddof=1) / np.sqrt(ok.sum(0))
    np.testing.assert_allclose(res.g2, f32(ref), rtol=1e-6)
    np.testing.assert_allclose(res.g2_err, f32(ref_err), rtol=1e-6)
    assert res.g2[3, 1] > 0.9  # not dragged towards zero by the missing point
    np.testing.assert_allclose(
        read_saxs_2d(out), read_saxs_2d(paths[0]) * 3.0, rtol=1e-6
    )


def test_baseline_outlier_rejected_with_reason(tmp_path):
    paths = [
        write_file(tmp_path / f"ok{i}.hdf", rng=np.random.default_rng(i))
        for i in range(4)
    ]
    g, e = _g2(baseline=1.3)
    bad = write_file(tmp_path / "bad.hdf", g2=g, err=e)
    opts = AverageOptions(
        baseline_q_index=1, baseline_window=4, baseline_range=(0.95, 1.05)
    )
    summary = average_files([*paths, bad], tmp_path / "avg.hdf", opts)
    assert summary.rejected == [(str(bad), summary.rejected[0][1])]
    reason = summary.rejected[0][1]
    assert "baseline 1.3" in reason and "[0.95, 1.05]" in reason
    stat = summary.stats[-1]
    assert (
        stat.baseline == pytest.approx(f32(g)[-4:, 1].mean(), rel=1e-12)
        and not stat.accepted
    )
    with h5py.File(tmp_path / "avg.hdf", "r") as f:
        assert int(f["entry/average/n_files"][()]) == 4
        assert f["entry/average/rejected_files"][0].decode() == str(bad)


def test_mad_outliers_rejected_g2_and_intensity(tmp_path):
    paths = [
        write_file(
            tmp_path / f"ok{i}.hdf",
            rng=np.random.default_rng(10 + i),
            intensity=1 + 0.01 * i,
        )
        for i in range(6)
    ]
    g, e = _g2(tau_scale=3.0)  # much slower dynamics: a different curve
    bad_g2 = write_file(tmp_path / "slow.hdf", g2=g, err=e, intensity=1.02)
    bad_int = write_file(
        tmp_path / "bright.hdf", rng=np.random.default_rng(99), intensity=5.0
    )
    summary = screen_files([*paths, bad_g2, bad_int], AverageOptions(mad_threshold=5.0))
    rej = dict(summary.rejected)
    assert set(rej) == {str(bad_g2), str(bad_int)}
    assert "g2 curve deviates" in rej[str(bad_g2)] and "MADs" in rej[str(bad_g2)]
    assert "intensity" in rej[str(bad_int)]
    assert all(s.g2_z < 5 for s in summary.stats if s.accepted)
    # without a threshold nothing is rejected, but the statistics are there for the plot
    plain = screen_files([*paths, bad_g2, bad_int], AverageOptions())
    assert plain.rejected == [] and all(
        np.isfinite(s.g2_deviation) for s in plain.stats
    )


def test_different_qmaps_refused_naming_files(tmp_path):
    a = write_file(tmp_path / "a.hdf")
    b = write_file(tmp_path / "b.hdf")
    c = write_file(tmp_path / "c.hdf", qshift=1)
    out = tmp_path / "avg.hdf"
    with pytest.raises(IncompatibleFilesError) as info:
        average_files([a, b, c], out)
    msg = str(info.value)
    assert (
        str(c) in msg
        and str(a) in msg
        and "q-map" in msg
        and str(b) not in msg.split(":", 1)[1]
    )
    assert not out.exists()


def test_output_rules_and_unreadable(tmp_path):
    a = write_file(tmp_path / "a.hdf")
    b = write_file(tmp_path / "b.hdf")
    with pytest.raises(ValueError, match="one of the input files"):
        average_files([a, b], a)
    (tmp_path / "exists.hdf").write_bytes(b"x")
    with pytest.raises(OutputRefusedError, match="use --overwrite"):
        average_files([a, b], tmp_path / "exists.hdf")
    junk = tmp_path / "junk.hdf"
    junk.write_bytes(b"not hdf5")
    with pytest.raises(UnreadableFilesError) as info:
        average_files([a, junk, tmp_path / "missing.hdf", b], tmp_path / "o.hdf")
    assert [e.path for e in info.value.errors] == [
        str(junk),
        str(tmp_path / "missing.hdf"),
    ]
    with pytest.raises(NoFilesAcceptedError, match="baseline"):
        average_files(
            [a, b], tmp_path / "o.hdf", AverageOptions(baseline_range=(2.0, 3.0))
        )
    assert not (tmp_path / "o.hdf").exists()
    with pytest.raises(ValueError):
        average_files([a, b], tmp_path / "o.hdf", AverageOptions(error_method="median"))


def test_progress_and_cancel(tmp_path):
    paths = [write_file(tmp_path / f"r{i}.hdf") for i in range(3)]
    seen = []
    average_files(
        paths, tmp_path / "o.hdf", progress=lambda d, t, m: seen.append((d, t))
    )
    assert seen[-1][0] == seen[-1][1] and all(d <= t for d, t in seen)
    token = CancelToken()

    def cancel_midway(done, total, msg):
        if done >= 4:
            token.cancel()

    with pytest.raises(Cancelled):
        average_files(paths, tmp_path / "c.hdf", progress=cancel_midway, cancel=token)
    assert not (tmp_path / "c.hdf").exists()


def test_partial_missing_in_one_file_noted(tmp_path):
    a = write_file(tmp_path / "a.hdf")
    b = write_file(tmp_path / "b.hdf", partial=False, stack=False)
    c = write_file(tmp_path / "c.hdf", stack=True)
    summary = average_files([c, a, b], tmp_path / "o.hdf")
    assert "g2_partial" not in summary.fields and "g2_stack" not in summary.fields
    assert any("partial" in n for n in summary.notes)
    assert any("G2/IP/IF" in n for n in summary.notes)


def _peak(paths, out) -> int:
    gc.collect()
    tracemalloc.start()
    average_files(paths, out, AverageOptions(include_g2_stack=False))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


@pytest.mark.slow
def test_memory_bounded_by_files_not_count(tmp_path):
    # Big images make one file's worth of memory dominate; 50 files must not cost 10x 5.
    global H, W
    H, W = 160, 160
    try:
        src = write_file(tmp_path / "src.hdf")
        paths = []
        for i in range(50):
            # copies, not hard links: the same file twice is refused (issue 11)
            p = tmp_path / f"m{i}.hdf"
            shutil.copyfile(src, p)
            paths.append(p)
        _peak(paths[:2], tmp_path / "warmup.hdf")  # first-use allocations of h5py/numpy
        p5 = _peak(paths[:5], tmp_path / "o5.hdf")
        p50 = _peak(paths, tmp_path / "o50.hdf")
    finally:
        H, W = 12, 16
    assert p5 > 160 * 160 * 8  # at least one image in memory: the measure is meaningful
    print(f"tracemalloc peak: 5 files {p5 / 1e6:.2f} MB, 50 files {p50 / 1e6:.2f} MB")
    assert p50 < 1.5 * p5, (p5, p50)


@pytest.mark.realdata
@pytest.mark.parametrize("method", ["weighted", "sem"])
def test_real_files_average_matches_numpy(real_data_dir, tmp_path, method):
    files = sorted(
        (real_data_dir / "aps8idi_llps_saxpcs").glob("Average_B0147*_results.hdf")
    )[-3:]
    assert len(files) == 3
    out = tmp_path / "avg.hdf"
    summary = average_files(files, out, AverageOptions(error_method=method))
    assert len(summary.accepted) == 3
    ins = [read_result(f).multitau for f in files]
    xs = np.stack([m.g2 for m in ins])
    es = np.stack([m.g2_err for m in ins])
    ok = np.stack([m.valid for m in ins])
    if method == "weighted":
        ok &= es > 0
        w = np.where(ok, 1 / np.where(ok, es, 1) ** 2, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = (w * xs).sum(0) / w.sum(0)
    else:
        n = ok.sum(0)
        ref = np.where(ok, xs, 0).sum(0) / np.maximum(n, 1)
    res = read_result(out).multitau
    some = ok.any(0)
    np.testing.assert_array_equal(res.valid, some)  # missing everywhere stays missing
    np.testing.assert_allclose(res.g2[some], f32(ref[some]), rtol=1e-6)
    # the output is a normal result file: same q-map and delays as the inputs
    first = read_result(files[0])
    np.testing.assert_array_equal(
        read_result(out).qmap.dynamic_roi_map, first.qmap.dynamic_roi_map
    )
    np.testing.assert_array_equal(res.delay_frames, ins[0].delay_frames)


def test_g2_stack_streamed_one_delay_at_a_time(tmp_path):
    global H, W
    H, W = 96, 96
    try:
        paths = [
            write_file(tmp_path / f"s{i}.hdf", stack=True, image_scale=1.0 + i)
            for i in range(3)
        ]
        stack_f64 = len(DELAYS) * 3 * H * W * 8
        opts = AverageOptions(include_saxs_2d=False)
        average_files(paths[:2], tmp_path / "warm.hdf", opts)
        seen = []
        gc.collect()
        tracemalloc.start()
        summary = average_files(
            paths,
            tmp_path / "o.hdf",
            opts,
            progress=lambda d, t, m: seen.append((d, t)),
        )
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        base = np.arange(H * W, dtype=float).reshape(H, W) + 1
    finally:
        H, W = 12, 16
    assert "g2_stack" in summary.fields
    # far below one float64 copy of the stack: it is never held whole
    print(
        f"G2 stack average: tracemalloc peak {peak / 1e6:.2f} MB, "
        f"one float64 stack {stack_f64 / 1e6:.2f} MB"
    )
    assert peak < 0.5 * stack_f64, (peak, stack_f64)
    done = [d for d, _ in seen]
    assert done == sorted(done) and seen[-1][0] == seen[-1][1]
    for k in (0, 5):
        g, ip, if_ = read_g2_stack_delay(tmp_path / "o.hdf", k)
        np.testing.assert_allclose(
            g, f32(base * (k + 1)) * 2.0, rtol=1e-6
        )  # mean scale 2
        np.testing.assert_allclose(ip, f32(base), rtol=1e-6)
        np.testing.assert_allclose(if_, f32(base + k), rtol=1e-6)
    assert read_result(tmp_path / "o.hdf").multitau.has_unnormalized_G2
    assert not list(tmp_path.glob(".o.hdf.*"))  # no temporary left behind
