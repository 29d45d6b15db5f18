"""Publication figures of every view, built with matplotlib's object API on Agg.

``make_figure(kind, results, **options)`` returns a ``matplotlib.figure.Figure``
(never registered with pyplot, so it is safe in worker threads); save it with
:func:`xpcsviewer.export.save_figure`. The data preparation comes from
:mod:`xpcsviewer.export.g2_data` and :mod:`xpcsviewer.export.saxs_data`, which the GUI
tabs also use, so the figure matches the screen.

Kinds and their options
-----------------------
``saxs2d``
    file_index=0, image=None ((H, W) array; default ``io.read_saxs_2d``), log=True,
    cmap="viridis", levels=None ((lo, hi); default 0.5-99.5 percentile), beam_center=True.
``saxs1d``
    phi_lines=False, norm="none" ("iq2", "iq4", "i0"), qmin, qmax, log_x=True,
    log_y=True, background=None (XpcsResult), bkg_weight=1.0, sampling=1, legend=True.
``stability``
    file_index=0, qmin, qmax, log_x=True, log_y=True, threshold=0.05.
``intensity``
    window=1 (moving average), time_axis=True, fft=False, sampling=1.
``g2``
    layout="qbin" ("file", "combined"), qmin, qmax, tmin, tmax, max_bins=None,
    errorbars=True, offset=0.0 (per file in "qbin"/"combined", per bin in "file"),
    log_x=True, ncols=4, fits=None (G2Fits), band=True, legend=True, ylim=None (default: 2-98 percentile of the points, padded),
    max_panels=36 (more panels are left out; the title says so).
``diffusion``
    fits (G2Fits, required), quantity="tau" ("gamma"), log_x=True, log_y=True,
    qmin, qmax, exponent=None (None fits it; -2 for Brownian), offset=0.0 (factor
    10^(offset*n) per file), show_fit=True.
``twotime``
    file_index=0, bin_index=0 (index into the processed bins), max_size=1024,
    correct_diagonal=False, cmap="viridis", levels=None, view=None (a C2View-like object
    with ``c2``, ``t0``, ``label``; default ``io.read_c2``), g2=True.
``qmap``
    file_index=0, which="both" ("dynamic", "static").
``g2stability``
    file_index=0, bin_index=0 (g2 column), threshold=10.0 (% drift flagged),
    errorbars=True, legend=True. The partial g2 snapshots are fitted here with
    :func:`xpcsviewer.fitting.stability.fit_partial_snapshots`.
``g2map``
    file_index=0, bin_index=0 (g2 column of the profile), normalize=False,
    cmap="viridis", levels=None ((lo, hi); default 1-99 percentile), profile=True.
``average``
    statistic="baseline" ("g2_z", "intensity_z", "intensity"), summary=None
    (AverageSummary; default: screen ``results`` with ``options``), options=None
    (AverageOptions; also sets the threshold lines), max_names=24 (file names as
    tick labels up to this many files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xpcsviewer.export import g2_data, saxs_data

__all__ = ["AVERAGE_STATISTICS", "FIGURE_KINDS", "make_figure", "new_figure"]

INV_A = "\u00c5\u207b\u00b9"
_STYLE = {
    "font.size": 10,
    "axes.labelsize": 11,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "lines.linewidth": 1.3,
    "lines.markersize": 4,
    "axes.grid": False,
}
_MARKERS = ["o", "s", "^", "v", "D", "<", ">", "p", "h", "*", "P", "X"]


def new_figure(width: float = 6.4, height: float = 4.8) -> Any:
    """A pyplot-free ``Figure`` with an Agg canvas (inches)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(max(n, 1))]


def _pick(results: list, file_index: int) -> Any:
    if not results:
        raise ValueError("no result files given")
    if not 0 <= int(file_index) < len(results):
        raise IndexError(f"file_index {file_index} outside 0..{len(results) - 1}")
    return results[int(file_index)]


def _no_data(fig: Any, text: str) -> Any:
    ax = fig.add_subplot(1, 1, 1)
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


# ------------------------------------------------------------------------ SAXS
def _fig_saxs2d(
    results: list,
    file_index: int = 0,
    image: Any = None,
    log: bool = True,
    cmap: str = "viridis",
    levels: tuple[float, float] | None = None,
    beam_center: bool = True,
) -> Any:
    res = _pick(results, file_index)
    if image is None:
        from xpcsviewer import io as xio

        reader = getattr(xio, "read_saxs_2d", None)
        if reader is None:
            raise RuntimeError("xpcsviewer.io.read_saxs_2d is not available")
        image = reader(res.path)
    from xpcsviewer.backends import ensure_numpy

    img = np.asarray(ensure_numpy(image), dtype=np.float64)
    shown = saxs_data.log_image(img) if log else img
    lo, hi = levels if levels is not None else saxs_data.auto_levels(shown)
    h, w = img.shape
    fig = new_figure(6.0, 5.0 * h / max(w, 1) + 0.6)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(
        shown, origin="upper", cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest"
    )
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    cb.set_label(
        "log\u2081\u2080 I (photons/pixel/frame)" if log else "I (photons/pixel/frame)"
    )
    if beam_center:
        ax.plot(
            [res.qmap.beam_center_x],
            [res.qmap.beam_center_y],
            "r+",
            ms=12,
            mew=1.5,
            label="beam centre",
        )
        ax.legend(loc="upper right")
    ax.set_xlabel("column (pixel)")
    ax.set_ylabel("row (pixel)")
    ax.set_title(f"{res.label}: scattering image")
    return fig


def _fig_saxs1d(
    results: list,
    phi_lines: bool = False,
    norm: str = "none",
    qmin: float | None = None,
    qmax: float | None = None,
    log_x: bool = True,
    log_y: bool = True,
    background: Any = None,
    bkg_weight: float = 1.0,
    sampling: int = 1,
    legend: bool = True,
) -> Any:
    curves = saxs_data.saxs1d_curves(
        results,
        phi_lines=phi_lines,
        norm=norm,
        qmin=qmin,
        qmax=qmax,
        background=background,
        bkg_weight=bkg_weight,
        sampling=sampling,
    )
    fig = new_figure()
    ax = fig.add_subplot(1, 1, 1)
    colors = _colors(len(results))
    for c in curves:
        ok = np.isfinite(c.y) & ((c.y > 0) if log_y else True)
        style = "-" if c.kind == "mean" else "--"
        ax.plot(
            c.x[ok],
            c.y[ok],
            style,
            color=colors[c.index % len(colors)],
            lw=1.5 if c.kind == "mean" else 0.8,
            label=c.label,
        )
    ax.set_xscale("log" if log_x else "linear")
    ax.set_yscale("log" if log_y else "linear")
    ax.set_xlabel(f"q ({INV_A})")
    ax.set_ylabel(saxs_data.normalization_label(norm))
    ax.set_title(
        "SAXS 1-D" + (" (background subtracted)" if background is not None else "")
    )
    if legend and curves:
        ax.legend(loc="best")
    return fig


def _fig_stability(
    results: list,
    file_index: int = 0,
    qmin: float | None = None,
    qmax: float | None = None,
    log_x: bool = True,
    log_y: bool = True,
    threshold: float = 0.05,
) -> Any:
    res = _pick(results, file_index)
    fig = new_figure()
    if res.saxs_1d_segments is None:
        return _no_data(fig, f"{res.label}: no time-segment profiles in the file")
    st = saxs_data.stability_analysis(
        res.saxs_1d_segments, res.qmap, threshold, qmin, qmax
    )
    ax = fig.add_subplot(1, 1, 1)
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    n = st.profiles.shape[0]
    keep = saxs_data.q_range_mask(st.q, qmin, qmax)
    for s in range(n):
        y = st.profiles[s]
        ok = keep & np.isfinite(y) & ((y > 0) if log_y else True)
        ax.plot(
            st.q[ok],
            y[ok],
            color=cmap(s / max(n - 1, 1)),
            label=f"segment {s + 1} ({100 * st.rel_change[s]:.1f} %)",
        )
    ax.set_xscale("log" if log_x else "linear")
    ax.set_yscale("log" if log_y else "linear")
    ax.set_xlabel(f"q ({INV_A})")
    ax.set_ylabel("I (arb. units)")
    flag = "FLAGGED" if st.flagged else "stable"
    ax.set_title(
        f"{res.label}: max relative change {100 * st.max_rel_change:.2f} % ({flag})"
    )
    ax.legend(loc="best")
    return fig


def _fig_intensity(
    results: list,
    window: int = 1,
    time_axis: bool = True,
    fft: bool = False,
    sampling: int = 1,
) -> Any:
    curves = saxs_data.intensity_traces(
        results, window=window, time_axis=time_axis, sampling=sampling
    )
    fig = new_figure(7.0, 5.5 if fft else 4.0)
    if not curves:
        return _no_data(fig, "no intensity-vs-time data in the files")
    ax = fig.add_subplot(2 if fft else 1, 1, 1)
    colors = _colors(len(results))
    for c in curves:
        ax.plot(c.x, c.y, color=colors[c.index % len(colors)], lw=0.8, label=c.label)
    ax.set_xlabel("t (s)" if time_axis else "frame")
    ax.set_ylabel("mean intensity (photons/pixel/frame)")
    ax.set_title(
        "Intensity vs time" + (f" (moving average {window})" if window > 1 else "")
    )
    ax.legend(loc="best")
    if fft:
        ax2 = fig.add_subplot(2, 1, 2)
        for c in curves:
            res = results[c.index]
            dt = float(np.median(np.diff(c.x))) if (time_axis and c.x.size > 1) else 1.0
            f, mag = saxs_data.intensity_fft(c.y, dt if dt > 0 else 1.0)
            ax2.plot(
                f[1:],
                mag[1:],
                color=colors[c.index % len(colors)],
                lw=0.8,
                label=res.label,
            )
        ax2.set_xlabel("frequency (Hz)" if time_axis else "frequency (1/frame)")
        ax2.set_ylabel("|FFT| (photons/pixel/frame)")
        ax2.set_yscale("log")
    return fig


def _fig_qmap(results: list, file_index: int = 0, which: str = "both") -> Any:
    res = _pick(results, file_index)
    qm = res.qmap
    kinds = {
        "both": ["dynamic", "static"],
        "dynamic": ["dynamic"],
        "static": ["static"],
    }
    if which not in kinds:
        raise ValueError(f"which must be one of {sorted(kinds)}, got {which!r}")
    names = kinds[which]
    h, w = qm.shape
    fig = new_figure(5.2 * len(names), 4.6 * h / max(w, 1) + 0.8)
    for k, name in enumerate(names):
        ax = fig.add_subplot(1, len(names), k + 1)
        roi = np.asarray(getattr(qm, f"{name}_roi_map"), dtype=np.float64)
        shown = np.where(roi > 0, roi, np.nan)
        im = ax.imshow(shown, origin="upper", cmap="tab20", interpolation="nearest")
        cb = fig.colorbar(im, ax=ax, shrink=0.8)
        cb.set_label(f"{name} bin (1-based)")
        ax.plot([qm.beam_center_x], [qm.beam_center_y], "k+", ms=10)
        n = qm.n_dynamic if name == "dynamic" else qm.n_static
        ax.set_title(f"{res.label}: {name} q-map ({n} bins)")
        ax.set_xlabel("column (pixel)")
        ax.set_ylabel("row (pixel)")
    return fig


# -------------------------------------------------------------------------- g2
def _draw_g2_curve(
    ax,
    block: g2_data.G2Block,
    j: int,
    color,
    marker: str,
    shift: float,
    errorbars: bool,
    label: str,
) -> None:
    t, y, e = g2_data.g2_points(block, j)
    if errorbars:
        ax.errorbar(
            t,
            y + shift,
            yerr=e,
            fmt=marker,
            ms=3.5,
            mfc="none",
            color=color,
            elinewidth=0.6,
            capsize=0,
            label=label,
        )
    else:
        ax.plot(t, y + shift, marker, ms=3.5, mfc="none", color=color, label=label)


#: How a fit curve is drawn by its status: (line style, width, grey).
FIT_STYLE = {
    "converged": ("-", 1.0, False),
    "unresolved": (":", 1.0, False),
    "at_bound": (":", 1.0, False),
    "poor_fit": ("--", 0.9, False),
    "no_decay": ("--", 0.8, True),
    "failed": ("-.", 0.8, True),  # e.g. NUTS that failed its gates
}


def _draw_g2_fit(
    ax,
    fits: g2_data.G2Fits | None,
    block: g2_data.G2Block,
    j: int,
    color,
    shift: float,
    band: bool,
) -> None:
    if fits is None:
        return
    row = fits.find(block.file_index, int(block.columns[j]))
    if row is None or not np.isfinite(fits.params[fits.param_names[0]][row]):
        return
    ls, lw, grey = FIT_STYLE.get(str(fits.status[row]), FIT_STYLE["failed"])
    grid = g2_data.g2_tau_grid(block.tau)
    y = fits.curve([row], grid)[0]
    ax.plot(grid, y + shift, ls, color="0.55" if grey else color, lw=lw)
    if band and str(fits.status[row]) != "no_decay":
        b = fits.band([row], grid)
        if b is not None and np.isfinite(b[0]).any():
            ax.fill_between(
                grid, b[0, 0] + shift, b[0, 2] + shift, color=color, alpha=0.25, lw=0
            )


def _fig_g2(
    results: list,
    layout: str = "qbin",
    qmin: float | None = None,
    qmax: float | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
    max_bins: int | None = None,
    errorbars: bool = True,
    offset: float = 0.0,
    log_x: bool = True,
    ncols: int = 4,
    fits: g2_data.G2Fits | None = None,
    band: bool = True,
    legend: bool = True,
    ylim: tuple[float, float] | None = None,
    max_panels: int = 36,
    exclude_suspect: bool = True,
) -> Any:
    if layout not in ("qbin", "file", "combined"):
        raise ValueError(f"layout must be 'qbin', 'file' or 'combined', got {layout!r}")
    blocks = g2_data.g2_blocks(results, qmin, qmax, tmin, tmax, max_bins,
                               exclude_suspect=exclude_suspect)
    if not blocks:
        return _no_data(
            new_figure(), "no multitau g2 in the selected files and q range"
        )
    colors_f = _colors(len(results))
    if layout == "qbin":
        # One panel per g2 column (bins are matched across files by column number).
        cols = sorted({int(c) for b in blocks for c in b.columns})
        panels = [
            (
                c,
                [
                    (b, int(np.flatnonzero(b.columns == c)[0]))
                    for b in blocks
                    if c in b.columns
                ],
            )
            for c in cols
        ]
        titles = []
        for _c, members in panels:
            b, j = members[0]
            titles.append(b.bin_labels[j])
    elif layout == "file":
        panels = [(b.file_index, [(b, j) for j in range(b.n_bins)]) for b in blocks]
        titles = [b.label for b in blocks]
    else:
        panels = [(0, [(b, j) for b in blocks for j in range(b.n_bins)])]
        titles = ["g2, all files and bins"]
    n_all = len(panels)
    # Hundreds of subplots are unreadable (and slow): keep the first ones, say so.
    panels, titles = panels[: max(1, int(max_panels))], titles[: max(1, int(max_panels))]
    n = len(panels)
    nc = max(1, min(int(ncols), n))
    nr = int(np.ceil(n / nc))
    fig = new_figure(min(3.2 * nc, 16.0), min(2.8 * nr + 0.4, 40.0))
    axes = fig.subplots(nr, nc, squeeze=False)
    for k, ((_key, members), title) in enumerate(zip(panels, titles, strict=True)):
        ax = axes[k // nc][k % nc]
        colors_b = _colors(len(members))
        for m, (b, j) in enumerate(members):
            if layout == "qbin":
                color, marker = colors_f[b.file_index % 10], _MARKERS[b.file_index % 12]
                shift, lab = offset * b.file_index, b.label
            elif layout == "file":
                color, marker = colors_b[m], _MARKERS[m % 12]
                shift, lab = offset * m, b.bin_labels[j]
            else:
                color, marker = colors_b[m], _MARKERS[b.file_index % 12]
                shift, lab = offset * m, f"{b.label} {b.bin_labels[j]}"
            _draw_g2_curve(ax, b, j, color, marker, shift, errorbars, lab)
            if b.excluded is not None and b.excluded[:, j].any():
                ex = b.excluded[:, j]  # drawn, but left out of the fit
                ax.plot(b.tau[ex], b.g2[ex, j] + shift, "x", color="0.6", ms=4)
            _draw_g2_fit(ax, fits, b, j, color, shift, band)
        ax.set_xscale("log" if log_x else "linear")
        if ylim is not None:
            ax.set_ylim(*ylim)
        else:
            shifts = [offset * (b.file_index if layout == "qbin" else m)
                      for m, (b, _j) in enumerate(members)]
            auto = g2_data.robust_ylim(
                [g2_data.g2_points(b, j)[1] + s for (b, j), s in zip(members, shifts, strict=True)])
            if auto is not None:
                ax.set_ylim(*auto)
        ax.set_title(title)
        ax.set_xlabel("\u03c4 (s)")
        ax.set_ylabel("g\u2082(q, \u03c4)")
        if legend and len(members) <= 12:
            ax.legend(loc="upper right", fontsize=7)
    for k in range(n, nr * nc):
        axes[k // nc][k % nc].set_axis_off()
    head = f"g2 with {fits.method} fits ({fits.model} model)" if fits is not None else ""
    if n_all > n:
        head += ("; " if head else "") + f"first {n} of {n_all} panels"
    if head:
        fig.suptitle(head)
    return fig


# ------------------------------------------------------------------- diffusion
def _fig_diffusion(
    results: list,
    fits: g2_data.G2Fits | None = None,
    quantity: str = "tau",
    log_x: bool = True,
    log_y: bool = True,
    qmin: float | None = None,
    qmax: float | None = None,
    exponent: float | None = None,
    offset: float = 0.0,
    show_fit: bool = True,
) -> Any:
    from xpcsviewer.fitting import diffusion_verdict, fit_diffusion

    fig = new_figure()
    if fits is None or fits.n_curves == 0:
        return _no_data(fig, "no g2 fits: fit the g2 curves first")
    pts = g2_data.diffusion_points(fits, quantity)
    ax = fig.add_subplot(1, 1, 1)
    colors = _colors(len(results) or len(pts))
    q_range = (
        None
        if (qmin is None and qmax is None)
        else (qmin if qmin is not None else 0.0, qmax if qmax is not None else np.inf)
    )
    lines = []
    for n, p in enumerate(pts):
        factor = 10.0 ** (offset * n)
        color = colors[p.file_index % len(colors)]
        ax.errorbar(
            p.q,
            p.y * factor,
            yerr=p.y_err * factor,
            fmt=_MARKERS[n % 12],
            mfc="none",
            color=color,
            capsize=0,
            elinewidth=0.7,
            label=f"{p.label}"
            + (f" ({p.n_dropped} bins not converged)" if p.n_dropped else ""),
        )
        if show_fit and p.q.size >= 2:
            tau = p.y if quantity == "tau" else 1.0 / p.y
            tau_err = p.y_err if quantity == "tau" else p.y_err * tau**2
            verdict = diffusion_verdict(p.q, tau, tau_err, q_range)
            dr = verdict.free if exponent is None else fit_diffusion(
                p.q, tau, tau_err, q_range, exponent)
            if np.isfinite(dr.prefactor):
                sel = p.q[dr.used] if dr.used.any() else p.q
                grid = np.geomspace(sel.min() / 1.1, sel.max() * 1.1, 128)
                yfit = dr.curve(grid) if quantity == "tau" else 1.0 / dr.curve(grid)
                txt = (
                    f"b = {dr.exponent:g} (fixed)"
                    if dr.exponent_fixed
                    else f"b = {dr.exponent:.3f} \u00b1 {dr.exponent_err:.3f}"
                )
                if verdict.diffusive:
                    txt += f", D = {verdict.D:.4g} \u00b1 {verdict.D_err:.2g} \u00c5\u00b2/s"
                else:
                    txt += f": {verdict.verdict.replace('_', ' ')}"
                ax.plot(grid, yfit * factor, "-", color=color, lw=1.0, label=txt)
                lines.append(txt)
    ax.set_xscale("log" if log_x else "linear")
    ax.set_yscale("log" if log_y else "linear")
    ax.set_xlabel(f"q ({INV_A})")
    ax.set_ylabel("\u03c4 (s)" if quantity == "tau" else "\u0393 (s\u207b\u00b9)")
    law = "\u03c4 = A q^b" if quantity == "tau" else "\u0393 = q^-b / A"
    ax.set_title(f"Relaxation vs q ({fits.method} {fits.model} fits; power law {law})")
    ax.legend(loc="best")
    return fig


# --------------------------------------------------------------------- twotime
def _fig_twotime(
    results: list,
    file_index: int = 0,
    bin_index: int = 0,
    max_size: int = 1024,
    correct_diagonal: bool = False,
    cmap: str = "viridis",
    levels: tuple[float, float] | None = None,
    view: Any = None,
    g2: bool = True,
) -> Any:
    res = _pick(results, file_index)
    tt = res.twotime
    if tt is None:
        return _no_data(new_figure(), f"{res.label}: no two-time analysis in the file")
    n_p = len(tt.processed_bins)
    if not 0 <= int(bin_index) < n_p:
        raise IndexError(f"bin_index {bin_index} outside 0..{n_p - 1}")
    if view is None:
        from xpcsviewer import io as xio

        reader = getattr(xio, "read_c2", None)
        if reader is None:
            raise RuntimeError("xpcsviewer.io.read_c2 is not available")
        view = reader(
            res.path,
            int(bin_index),
            max_size=int(max_size),
            correct_diagonal=bool(correct_diagonal),
        )
    from xpcsviewer.backends import ensure_numpy

    c2 = np.asarray(ensure_numpy(view.c2), dtype=np.float64)
    t = g2_data.c2_time_axis(c2.shape[0], float(view.t0))
    lo, hi = levels if levels is not None else saxs_data.auto_levels(c2)
    curves = g2_data.twotime_g2_curves(tt, int(bin_index)) if g2 else None
    fig = new_figure(11.0 if curves else 6.0, 4.8)
    ax = fig.add_subplot(1, 2 if curves else 1, 1)
    step = float(view.t0)
    extent = (
        (t[0] - step / 2, t[-1] + step / 2, t[-1] + step / 2, t[0] - step / 2)
        if t.size
        else None
    )
    im = ax.imshow(
        c2,
        origin="upper",
        cmap=cmap,
        vmin=lo,
        vmax=hi,
        extent=extent,
        interpolation="nearest",
    )
    ax.invert_yaxis()
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    cb.set_label("C(t\u2081, t\u2082)")
    ax.set_xlabel("t\u2082 (s)")
    ax.set_ylabel("t\u2081 (s)")
    label = getattr(view, "label", "") or f"bin {tt.processed_bins[int(bin_index)]}"
    ax.set_title(
        f"{res.label}: {label}" + (" (diagonal corrected)" if correct_diagonal else "")
    )
    if curves:
        t_full, g_full, t_seg, g_seg = curves
        ax2 = fig.add_subplot(1, 2, 2)
        ax2.plot(t_full, g_full, "k-", lw=2.0, label="full")
        from matplotlib import colormaps

        cm = colormaps["plasma"]
        for s in range(g_seg.shape[0]):
            ax2.plot(
                t_seg,
                g_seg[s],
                "-",
                lw=1.0,
                color=cm(s / max(g_seg.shape[0], 1)),
                label=f"segment {s + 1}",
            )
        ax2.set_xscale("log")
        ax2.set_xlabel("\u03c4 (s)")
        ax2.set_ylabel("g\u2082 from C\u2082")
        ax2.set_title("g2 from the two-time map")
        ax2.legend(loc="upper right")
    return fig


# ----------------------------------------------------------------- g2 stability
def _fig_g2stability(
    results: list,
    file_index: int = 0,
    bin_index: int = 0,
    threshold: float = 10.0,
    errorbars: bool = True,
    legend: bool = True,
) -> Any:
    res = _pick(results, file_index)
    mt = res.multitau
    if mt is None or mt.g2_partial is None:
        return _no_data(
            new_figure(), f"{res.label}: no partial g2 snapshots in the file"
        )
    from matplotlib.colors import LinearSegmentedColormap

    from xpcsviewer.fitting.stability import (
        drift_flagged,
        drift_text,
        fit_partial_snapshots,
    )

    part = np.asarray(mt.g2_partial, dtype=np.float64)
    err = None if mt.g2_partial_err is None else np.asarray(mt.g2_partial_err, float)
    fit = fit_partial_snapshots(
        np.asarray(mt.tau, dtype=np.float64),
        part,
        err,
        None if mt.g2_partial_labels is None else np.asarray(mt.g2_partial_labels),
        res.qmap.dynamic_labels(),
    )
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
    auto = g2_data.robust_ylim(shown)
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
    fig = new_figure(11.5 if profile else 6.4, 5.0)
    ax = fig.add_subplot(1, 2 if profile else 1, 1)
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
        ax2 = fig.add_subplot(1, 2, 2)
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
        auto = g2_data.robust_ylim([g2[ok, j]])
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
    from xpcsviewer.compute.averaging import (
        AverageOptions,
        IncompatibleFilesError,
        screen_files,
    )

    if summary is None:
        if not results:
            raise ValueError("no result files given")
        by_path = {str(r.path): r for r in results}
        try:
            summary = screen_files(
                [str(r.path) for r in results],
                options if options is not None else AverageOptions(),
                reader=lambda p: by_path[str(p)],
            )
        except IncompatibleFilesError as exc:
            import textwrap
            from pathlib import Path

            why = [f"{Path(p).name}: {w}" for p, w in exc.mismatches.items()]
            lines = [
                f"cannot average: {len(why)} file(s) differ from "
                f"{Path(exc.reference).name}:",
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


FIGURE_KINDS: dict[str, Callable[..., Any]] = {
    "saxs2d": _fig_saxs2d,
    "saxs1d": _fig_saxs1d,
    "stability": _fig_stability,
    "intensity": _fig_intensity,
    "g2": _fig_g2,
    "diffusion": _fig_diffusion,
    "twotime": _fig_twotime,
    "qmap": _fig_qmap,
    "g2stability": _fig_g2stability,
    "g2map": _fig_g2map,
    "average": _fig_average,
}


def make_figure(kind: str, results: list, **options: Any) -> Any:
    """Build the publication figure of ``kind`` for ``results``.

    Parameters
    ----------
    kind : str
        One of :data:`FIGURE_KINDS` (see the module docstring for each kind's options).
    results : list of XpcsResult
    **options
        Kind-specific options; unknown options raise ``TypeError``.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot; save with :func:`~xpcsviewer.export.save_figure`.
    """
    import matplotlib

    fn = FIGURE_KINDS.get(kind)
    if fn is None:
        raise ValueError(
            f"unknown figure kind {kind!r}; use one of {sorted(FIGURE_KINDS)}"
        )
    with matplotlib.rc_context(_STYLE):
        return fn(list(results), **options)
