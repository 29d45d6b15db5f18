"""Figures of the multi-file views: g2 stability, g2 map, Average."""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import _no_data, _pick, new_figure, side_by_side
from xpcsviewer.views.g2 import robust_ylim


# ----------------------------------------------------------------- g2 stability
def _fig_g2stability(
    results: list,
    file_index: int = 0,
    bin_index: int = 0,
    threshold: float = 10.0,
    errorbars: bool = True,
    legend: bool = True,
    fit: Any = None,
) -> Any:
    res = _pick(results, file_index)
    mt = res.multitau
    if mt is None or mt.g2_partial is None:
        return _no_data(
            new_figure(), f"{res.label}: no partial g2 snapshots in the file"
        )
    if fit is None:
        raise ValueError("no snapshot fits given: pass fit= (a StabilityFit of "
                         "xpcsviewer.jobs.figure_inputs.stability_fit)")
    from matplotlib.colors import LinearSegmentedColormap

    from xpcsviewer.fitting.stability import drift_flagged, drift_text

    part = np.asarray(mt.g2_partial, dtype=np.float64)
    err = None if mt.g2_partial_err is None else np.asarray(mt.g2_partial_err, float)
    if fit.partial.shape != part.shape:
        raise ValueError(f"the snapshot fits handed ({fit.partial.shape}) are not of "
                         f"{res.label}'s snapshots ({part.shape})")
    n_p, _n_t, n_d = part.shape
    if not 0 <= int(bin_index) < n_d:
        raise IndexError(f"bin_index {bin_index} outside 0..{n_d - 1}")
    j = int(bin_index)
    fig = new_figure(7.0, 5.2)
    ax = fig.add_subplot(1, 1, 1)
    # blue (first snapshot) -> red (last), as in the tab
    cmap = LinearSegmentedColormap.from_list("early_late", ["#1f77b4", "#d62728"])
    shown = []
    for p in range(n_p):
        color = cmap(p / max(1, n_p - 1))
        y = part[p, :, j]
        ok = np.isfinite(y) & (y != 0)
        label = f"frames={int(fit.labels[p])}"
        if errorbars and err is not None:
            e = np.where(np.isfinite(err[p, :, j]), err[p, :, j], 0.0)
            ax.errorbar(
                fit.tau[ok],
                y[ok],
                yerr=e[ok],
                fmt="o",
                ms=3.5,
                mfc="none",
                color=color,
                elinewidth=0.6,
                capsize=0,
                label=label,
            )
        else:
            ax.plot(
                fit.tau[ok], y[ok], "o", ms=3.5, mfc="none", color=color, label=label
            )
        shown.append(y[ok])
        if np.isfinite(fit.fit_tau[p, j]):
            ax.plot(fit.grid, fit.curves[p, j], "-", color=color, lw=1.0)
    ax.set_xscale("log")
    auto = robust_ylim(shown)
    if auto is not None:
        ax.set_ylim(*auto)
    ax.set_xlabel("\u03c4 (s)")
    ax.set_ylabel("g\u2082(q, \u03c4)")
    bin_label = fit.bin_labels[j] if j < len(fit.bin_labels) else f"bin {j + 1}"
    ax.set_title(f"{res.label}: {bin_label}")
    if legend:
        ax.legend(
            loc="upper right",
            title="cumulative snapshots (lines: single-exp. fits)",
            title_fontsize=8,
        )
    flagged = drift_flagged(fit, threshold)
    head = drift_text(fit, j)
    if flagged is not None:
        head += "\n" + (
            f"dynamics change during the measurement (|drift| > {threshold:g} %)"
            if flagged
            else f"stationary within {threshold:g} %"
        )
    fig.suptitle(head, fontsize=9, color="#c0392b" if flagged else "black")
    return fig


# ---------------------------------------------------------------------- g2 map
def _log_edges(tau: np.ndarray) -> np.ndarray:
    """Cell edges around positive delays, halfway between them in log space."""
    lt = np.log10(tau)
    if lt.size == 1:
        return 10.0 ** np.array([lt[0] - 0.5, lt[0] + 0.5])
    mids = 0.5 * (lt[1:] + lt[:-1])
    first = lt[0] - (mids[0] - lt[0])
    last = lt[-1] + (lt[-1] - mids[-1])
    return 10.0 ** np.concatenate([[first], mids, [last]])


def _fig_g2map(
    results: list,
    file_index: int = 0,
    bin_index: int = 0,
    normalize: bool = False,
    cmap: str = "viridis",
    levels: tuple[float, float] | None = None,
    profile: bool = True,
) -> Any:
    res = _pick(results, file_index)
    mt = res.multitau
    if mt is None:
        return _no_data(new_figure(), f"{res.label}: no multitau g2 in the file")
    tau = np.asarray(mt.tau, dtype=np.float64)
    g2 = np.asarray(mt.g2, dtype=np.float64)
    g2_err = np.asarray(mt.g2_err, dtype=np.float64)
    valid = np.asarray(mt.valid, bool) & np.isfinite(g2) & (tau > 0)[:, None]
    n_t, n_d = g2.shape
    if not 0 <= int(bin_index) < n_d:
        raise IndexError(f"bin_index {bin_index} outside 0..{n_d - 1}")
    j = int(bin_index)
    keep = tau > 0  # log axis: a zero delay has no place on it
    shown = np.where(valid, g2, np.nan)
    if normalize:
        ok0 = np.isfinite(shown[0])
        if ok0.any():
            shown = shown - shown[0] + np.nanmean(shown[0][ok0])
    img = np.ma.masked_invalid(shown[keep].T)  # (Nd, T)
    finite = img.compressed()
    if levels is not None:
        lo, hi = levels
    elif finite.size:
        lo, hi = (float(v) for v in np.percentile(finite, [1, 99]))
    else:
        lo, hi = None, None
    n_rows, n_cols = side_by_side(2) if profile else (1, 1)
    fig = new_figure(5.75 * n_cols if profile else 6.4, 5.0 * n_rows)
    ax = fig.add_subplot(n_rows, n_cols, 1)
    ax.set_facecolor("0.85")  # invalid points
    mesh = ax.pcolormesh(
        _log_edges(tau[keep]),
        np.arange(n_d + 1, dtype=np.float64),
        img,
        cmap=cmap,
        vmin=lo,
        vmax=hi,
        shading="flat",
        rasterized=True,
    )
    ax.set_xscale("log")
    ax.set_ylim(0, n_d)
    cb = fig.colorbar(mesh, ax=ax, shrink=0.85)
    cb.set_label(
        "g\u2082 \u2212 g\u2082(\u03c4\u2080) + \u27e8g\u2082(\u03c4\u2080)\u27e9"
        if normalize
        else "g\u2082"
    )
    qm = res.qmap
    q, phi = qm.dynamic_q, qm.dynamic_phi
    two_d = int(qm.dynamic_num_pts[1]) > 1
    rows = np.unique(np.linspace(0, n_d - 1, min(n_d, 16)).round().astype(int))
    ticks = [
        f"{q[r]:.4g}" + (f", {phi[r]:.0f}" if two_d else "")
        if r < q.size
        else str(r + 1)
        for r in rows
    ]
    ax.set_yticks(rows + 0.5, labels=ticks)
    ax.set_ylabel(
        f"bin centre: q ({qm.map_units[0]}), \u03c6 ({qm.map_units[1]})"
        if two_d
        else f"q of the bin centre ({qm.map_units[0]})"
    )
    ax.set_xlabel("\u03c4 (s)")
    ax.axhline(j + 0.5, color="r", lw=1.2)
    n_bad = int((~valid[keep]).sum())
    ax.set_title(
        f"{res.label}: g2 map" + (f" ({n_bad} invalid points grey)" if n_bad else "")
    )
    if profile:
        ax2 = fig.add_subplot(n_rows, n_cols, 2)
        ok = valid[:, j]
        e = np.where(np.isfinite(g2_err[ok, j]), g2_err[ok, j], 0.0)
        ax2.errorbar(
            tau[ok],
            g2[ok, j],
            yerr=e,
            fmt="o",
            ms=3.5,
            mfc="none",
            color="#1f77b4",
            elinewidth=0.6,
            capsize=0,
        )
        ax2.set_xscale("log")
        auto = robust_ylim([g2[ok, j]])
        if auto is not None:
            ax2.set_ylim(*auto)
        ax2.set_xlabel("\u03c4 (s)")
        ax2.set_ylabel("g\u2082(q, \u03c4)")
        labels = qm.dynamic_labels()
        ax2.set_title(
            f"{labels[j] if j < len(labels) else f'bin {j + 1}'} "
            f"({int(ok.sum())} of {n_t} points valid)"
        )
    return fig


# --------------------------------------------------------------------- average
AVERAGE_STATISTICS = {
    "baseline": "g\u2082 baseline (mean of the last delays)",
    "g2_z": "g\u2082 curve deviation (robust z, MADs)",
    "intensity_z": "mean intensity (robust z, MADs)",
    "intensity": "mean intensity (counts/pixel/frame)",
}
"""Statistics of the ``average`` figure and their axis labels."""


def _fig_average(
    results: list,
    statistic: str = "baseline",
    summary: Any = None,
    options: Any = None,
    max_names: int = 24,
) -> Any:
    if statistic not in AVERAGE_STATISTICS:
        raise ValueError(
            f"statistic must be one of {sorted(AVERAGE_STATISTICS)}, got {statistic!r}"
        )
    if summary is None:
        raise ValueError("no screening given: pass summary= "
                         "(xpcsviewer.jobs.figure_inputs.average_screen)")
    if isinstance(summary, Exception):  # the screening refused the files (an
        # IncompatibleFilesError: its reference file and what differs in each other)
        import textwrap
        from pathlib import Path

        why = [f"{Path(p).name}: {w}" for p, w in summary.mismatches.items()]
        lines = [
            f"cannot average: {len(why)} file(s) differ from "
            f"{Path(summary.reference).name}:",
            *why[:5],
        ]
        if len(why) > 5:
            lines.append(f"(+{len(why) - 5} more)")
        text = "\n".join(textwrap.fill(ln, 70) for ln in lines)
        return _no_data(new_figure(), text)
    # Threshold lines from the options shown (as the tab draws them), else from
    # the options the screening used.
    limits = options if options is not None else summary
    stats = summary.stats
    n = len(stats)
    vals = np.array([getattr(st, statistic) for st in stats], dtype=np.float64)
    acc = np.array([st.accepted for st in stats], dtype=bool)
    x = np.arange(n, dtype=np.float64)
    ok = np.isfinite(vals)
    names = n <= int(max_names)
    fig = new_figure(max(6.4, min(0.35 * n + 2.5, 14.0)) if names else 7.0, 4.8)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(
        x[ok & acc],
        vals[ok & acc],
        "o",
        color="#1f77b4",
        ms=5,
        label=f"accepted ({int(acc.sum())})",
    )
    ax.plot(
        x[ok & ~acc],
        vals[ok & ~acc],
        "x",
        color="#c0392b",
        ms=7,
        mew=1.5,
        label=f"rejected ({int((~acc).sum())})",
    )
    if statistic == "baseline" and limits.baseline_range is not None:
        lo, hi = (float(v) for v in limits.baseline_range)
        for k, v in enumerate((lo, hi)):
            ax.axhline(
                v,
                color="r",
                ls="--",
                lw=1.2,
                label=f"accepted range [{lo:g}, {hi:g}]" if k == 0 else None,
            )
    elif statistic in ("g2_z", "intensity_z") and limits.mad_threshold is not None:
        k = float(limits.mad_threshold)
        ax.axhline(k, color="r", ls="--", lw=1.2, label=f"threshold {k:g} MADs")
    if not ok.any():
        why = (
            "no robust z-scores: they need the MAD filter\n"
            "and 3 or more files left after the baseline filter"
            if statistic in ("g2_z", "intensity_z")
            else "no file has this statistic"
        )
        ax.text(
            0.5,
            0.5,
            why,
            ha="center",
            va="center",
            transform=ax.transAxes,
            bbox={"fc": "white", "ec": "0.6"},
        )
    if names:
        ax.set_xticks(x, labels=[st.label for st in stats], rotation=60, ha="right")
        ax.set_xlabel("file")
    else:
        ax.set_xlabel("file (index in the selection)")
    ax.set_xlim(-0.5, max(n, 1) - 0.5)
    ax.set_ylabel(AVERAGE_STATISTICS[statistic])
    if statistic in ("g2_z", "intensity_z") and ok.any():
        # one wild file scores in the hundreds: keep the threshold readable
        if np.nanmax(np.abs(vals)) > 30.0:
            ax.set_yscale("symlog", linthresh=10.0)
    ax.margins(y=0.08)
    missing = int((~ok).sum())
    ax.set_title(
        f"Averaging screen: {int(acc.sum())} of {n} files accepted "
        f"(errors: {summary.error_method})"
        + (f"; {missing} without a value" if missing and ok.any() else "")
    )
    fig.legend(loc="outside lower center", ncols=3)
    return fig
