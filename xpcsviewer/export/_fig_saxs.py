"""Figures of the SAXS views: SAXS-2D, SAXS-1D, stability, intensity vs time, q-map."""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import (
    INV_A,
    _colors,
    _no_data,
    _pick,
    new_figure,
    place_legend,
    side_by_side,
)
from xpcsviewer.views import display_image, intensity, saxs


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
    shown = display_image.log_image(img) if log else img
    lo, hi = levels if levels is not None else display_image.auto_levels(shown)
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
    # over the whole figure: an axes title runs into the colour bar's top label
    fig.suptitle(f"{res.label}: scattering image")
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
    curves = saxs.saxs1d_curves(
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
    ax.set_ylabel(saxs.normalization_label(norm))
    ax.set_title(
        "SAXS 1-D" + (" (background subtracted)" if background is not None else "")
    )
    if legend and curves:
        place_legend(fig, ax)
    return fig


def _fig_stability(
    results: list,
    file_index: int = 0,
    qmin: float | None = None,
    qmax: float | None = None,
    log_x: bool = True,
    log_y: bool = True,
    threshold: float = 0.10,
) -> Any:
    from xpcsviewer.views.stability import (
        stability_analysis,
        stability_axis_label,
        stability_summary,
    )

    res = _pick(results, file_index)
    fig = new_figure()
    if res.saxs_1d_segments is None:
        return _no_data(fig, f"{res.label}: no time-segment profiles in the file")
    # the tab's analysis: segments on the SAXS-1D scale, the noise-aware drift verdict
    st = stability_analysis(res.saxs_1d_segments, res.qmap, threshold, qmin, qmax,
                            saxs_1d=getattr(res, "saxs_1d", None))
    ax = fig.add_subplot(1, 1, 1)
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    n = st.profiles.shape[0]
    keep = saxs.q_range_mask(st.q, qmin, qmax)
    for s in range(n):
        y = st.profiles[s]
        ok = keep & np.isfinite(y) & ((y > 0) if log_y else True)
        ax.plot(
            st.q[ok],
            y[ok],
            color=cmap(s / max(n - 1, 1)),
            label=f"segment {s + 1} ({100 * st.rel_change[s]:+.1f} %)",
        )
    if st.mean_profile is not None:
        y = np.asarray(st.mean_profile, float)
        ok = keep & np.isfinite(y) & ((y > 0) if log_y else True)
        ax.plot(st.q[ok], y[ok], "k--", lw=1.0, label="time mean (SAXS-1D)")
    ax.set_xscale("log" if log_x else "linear")
    ax.set_yscale("log" if log_y else "linear")
    ax.set_xlabel(f"q ({INV_A})")
    ax.set_ylabel(stability_axis_label(st))
    ax.set_title(stability_summary(st, res.label))
    place_legend(fig, ax)
    return fig


def _fig_intensity(
    results: list,
    window: int = 1,
    time_axis: bool = True,
    fft: bool = False,
    sampling: int = 1,
) -> Any:
    curves = intensity.intensity_traces(
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
    place_legend(fig, ax)
    if fft:
        ax2 = fig.add_subplot(2, 1, 2)
        for c in curves:
            res = results[c.index]
            dt = float(np.median(np.diff(c.x))) if (time_axis and c.x.size > 1) else 1.0
            f, mag = intensity.intensity_fft(c.y, dt if dt > 0 else 1.0)
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
    n_rows, n_cols = side_by_side(len(names))
    fig = new_figure(5.2 * n_cols, (4.6 * h / max(w, 1) + 0.8) * n_rows)
    for k, name in enumerate(names):
        ax = fig.add_subplot(n_rows, n_cols, k + 1)
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
