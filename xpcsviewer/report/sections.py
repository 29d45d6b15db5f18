"""One file's part of the report, computed in a worker: numbers and figures as plain data.

:func:`file_section` reads a result file, fits its g2 with the one fit loop
(:func:`xpcsviewer.fitting.block_fits.fit_curves`, least squares, a model per bin by
AICc as ``xpcsviewer fit``), judges D(q) as the Diffusion tab does
(:func:`xpcsviewer.views.diffusion.diffusion_analysis`), the stability as the
Stability tab does, and draws the figures ``export`` draws for those views
(:func:`xpcsviewer.export.make_figures`). The result is a dict of strings, numbers
and PNG bytes, so it crosses a process boundary cheaply.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FIGURE_ORDER", "file_section", "png_bytes", "sha256_of"]

#: The per-file figures, in report order: (export kind, caption).
FIGURE_ORDER = (
    ("saxs2d", "SAXS-2D"),
    ("qmap", "q-map: the dynamic and static bins; pixels in no bin (masked ones too) blank"),
    ("saxs1d", "I(q)"),
    ("stability", "Stability: I(q) per time segment"),
    ("g2", "g2 per q-bin with the fitted model"),
    ("diffusion", "\u03c4(q) and the power law"),
)
#: Two-time thumbnails per file (the first processed bins).
MAX_TWOTIME = 4


def sha256_of(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of the file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def png_bytes(fig: Any, dpi: float, laid_out: bool = True) -> bytes:
    """``fig`` as a 256-colour PNG (a third of the RGB size: the report stays small; the
    octree quantizer: several times faster than median cut, and smaller).

    ``laid_out``: the figure was laid out by :func:`~xpcsviewer.export.make_figures`
    (its tidy pass): that layout is kept (the layout engine is switched off: the same
    pixels, ~40 % less time) rather than computed again.
    """
    from PIL import Image

    if laid_out:
        fig.set_layout_engine("none")
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=dpi)  # raw pixels: no PNG encoded twice
    w, h = int(fig.get_figwidth() * dpi), int(fig.get_figheight() * dpi)  # as Agg sizes
    if w * h * 4 == buf.tell():
        im = Image.frombuffer("RGBA", (w, h), buf.getvalue()).convert("RGB")
    else:  # the rounding of the canvas size differs: take the PNG route
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        im = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    out = io.BytesIO()
    im.quantize(256, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
    return out.getvalue()


def figure_pngs(kind: str, res: Any, dpi: float, **kw: Any) -> list[bytes]:
    """Every page of export's figure ``kind`` of ``res`` (a result or a list of them;
    page preset ``double``) as
    :func:`png_bytes` PNGs, each laid out, tidied and drawn by one drawing at ``dpi``
    (:func:`~xpcsviewer.export._layout.tidy_drawn`: a layout pass and a drawing were
    2/3 of the report's time, issue 49); the figures are cleared afterwards."""
    from PIL import Image

    from xpcsviewer.export import make_figures
    from xpcsviewer.export._fig_common import export_style
    from xpcsviewer.export._layout import tidy_drawn

    with export_style("double"):  # ticks made while drawing take the page's style
        pages = make_figures(kind, res if isinstance(res, list) else [res], tidy=False, **kw)
        try:
            out = []
            for fig in pages:
                canvas = tidy_drawn(fig, dpi)
                w, h = canvas.get_width_height()
                im = Image.frombuffer("RGBA", (w, h), bytes(canvas.buffer_rgba()))
                out.append(_png_of(im))
            return out
        finally:
            for p in pages:
                p.clear()


def _png_of(im: Any) -> bytes:
    """A 256-colour PNG of ``im`` (RGBA over white, or RGB)."""
    from PIL import Image

    if im.mode == "RGBA":
        bg = Image.new("RGBA", im.size, (255, 255, 255, 255))
        im = Image.alpha_composite(bg, im)
    out = io.BytesIO()
    im.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE).save(
        out, "PNG", optimize=True)
    return out.getvalue()


def _f(x: Any) -> float | None:
    """A finite float, or None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _why(exc: BaseException) -> str:
    from xpcsviewer.io.errors import display_path, one_line

    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return one_line(display_path(text))[:200]


def _age_lag(res: Any) -> str | None:
    """The file's age x lag map in words (its bins, frames, frame time, levels); None
    without one."""
    from xpcsviewer.views.age_lag_map import age_lag_text

    if getattr(res, "age_lag", None) is None:
        return None
    return age_lag_text(res.age_lag) + ("; beside the full two-time maps"
                                        if res.twotime is not None else
                                        "; no full two-time map (the figures draw this map)")


def _provenance(res: Any, path: Path, digest: str) -> dict[str, Any]:
    qm = res.qmap
    q = np.asarray(qm.dynamic_q, float)
    mask = np.asarray(qm.mask, bool)
    dyn = np.asarray(qm.dynamic_roi_map) > 0
    return {
        "file": str(path), "name": path.name, "size_bytes": path.stat().st_size,
        "sha256": digest, "layout": res.layout, "analysis": list(res.analysis_type),
        "start_time": res.start_time, "frame_time_s": _f(res.frame_time),
        "detector_shape": list(qm.shape), "energy_keV": _f(qm.energy_kev),
        "distance_m": _f(qm.detector_distance), "pixel_size_m": _f(qm.pixel_size),
        "beam_center": [_f(qm.beam_center_x), _f(qm.beam_center_y)],
        "n_dynamic": int(qm.n_dynamic), "n_static": int(qm.n_static),
        "q_range": [_f(np.nanmin(q)), _f(np.nanmax(q))] if q.size else [None, None],
        "qmap_hash": qm.hash or "",
        "mask_valid": int(mask.sum()), "mask_total": int(mask.size),
        "pixels_in_bins": int((dyn & mask).sum()),
        "warnings": list(res.warnings),
        "age_lag": _age_lag(res),
        "software": [f"{k}: {v}" for k, v in res.metadata.items()
                     if re.search("version|software|program", k, re.I)][:8],
    }


def _bins(fits: Any) -> list[dict[str, Any]]:
    """Every fitted bin: the fit table's numbers as quotable (one rule, status.quotable)."""
    out = []
    c, ce = fits.reported("contrast")
    tm, tme = fits.relaxation_time()
    for b in range(fits.n_curves):
        name = fits.tau_name(b)
        t, te = fits.reported(name)
        out.append({
            "bin": int(fits.columns[b]) + 1, "label": str(fits.bin_labels[b]),
            "q": _f(fits.q[b]), "phi": _f(fits.phi[b]), "model": fits.model_of(b),
            "status": str(fits.status[b]), "reason": str(fits.detail[b]),
            "contrast": _f(c[b]), "contrast_err": _f(ce[b]),
            "tau_name": name, "tau": _f(t[b]), "tau_err": _f(te[b]),
            "tau_mean": _f(tm[b]), "tau_mean_err": _f(tme[b]),
            "limit": fits.limit_text(b), "chi2_red": _f(fits.chi2_red[b]),
            # the time a limit is on (a double's tau2 leaves tau1 quotable): the rule's input
            "limit_name": (str(fits.limit_name[b]) if fits.has_limit(b)
                           and fits.limit_name is not None else ""),
        })
    return out


def _diffusion(analysis: Any, res: Any) -> dict[str, Any]:
    # the fit command's rule: a stated solvent only (no options: the file's)
    from xpcsviewer.jobs.fit import FitOptions, _radius

    if analysis is None or not analysis.laws:
        return {"verdict": "no_fits", "message": "no g2 fits", "n_good": 0}
    v = analysis.laws[0].verdict
    out = {"verdict": v.verdict, "message": v.message, "n_good": int(v.n_good),
           "exponent": _f(v.free.exponent), "exponent_err": _f(v.free.exponent_err),
           "D": _f(v.D), "D_err": _f(v.D_err),
           # issue 48: which q D is fitted at
           "q_note": analysis.laws[0].q_note}
    out.update(_radius(v, {"sample": dict(res.sample),
                           "sample_units": dict(res.sample_units)}, FitOptions()))
    return out


def _stability(res: Any) -> dict[str, Any]:
    from xpcsviewer.views.stability import stability_analysis, stability_summary

    if res.saxs_1d_segments is None:
        return {"verdict": "unknown", "summary": "no time-segment profiles in the file"}
    st = stability_analysis(res.saxs_1d_segments, res.qmap, 0.10,
                            saxs_1d=getattr(res, "saxs_1d", None))
    verdict = "damaged" if st.flagged else ("stable" if st.drift.size else "unknown")
    return {"verdict": verdict, "summary": stability_summary(st),
            "max_rel_change": _f(st.max_rel_change), "threshold": st.threshold}


def _quality(res: Any, prov: dict[str, Any]) -> dict[str, Any]:
    """What the file itself says about data quality (the pixel audit adds to it)."""
    out: dict[str, Any] = {"masked_fraction": 1.0 - prov["mask_valid"] / max(1, prov["mask_total"])}
    mt = res.multitau
    if mt is not None:
        valid = np.asarray(mt.valid, bool)
        out["g2_points"] = int(valid.size)
        out["invalid_points"] = int((~valid).sum())
        sus = getattr(mt, "err_suspect", None)
        out["suspect_points"] = int(np.asarray(sus, bool).sum()) if sus is not None else 0
    return out


#: The figures that need the fits: drawn by the "fits" part of a file, the rest by "images".
FIT_FIGURES = ("g2", "diffusion")


def _figures(res: Any, fits: Any, analysis: Any, dpi: float, saxs1d: bool = True,
             kinds: tuple[str, ...] | None = None,
             qmap_as: str | None = None) -> list[dict[str, Any]]:
    from xpcsviewer.views.age_lag_map import age_lag_only, has_twotime, map_bins

    todo: list[tuple[str, str, dict[str, Any]]] = []
    skipped: list[dict[str, Any]] = []
    for kind, caption in FIGURE_ORDER:
        if kinds is not None and kind not in kinds:
            continue
        if kind in FIT_FIGURES and res.multitau is None:
            continue
        if kind == "saxs1d" and not saxs1d:  # a set shows I(q) of all files in one figure
            continue
        if kind == "qmap" and qmap_as is not None:  # one run, one q-map: drawn once
            skipped.append({"kind": kind, "caption": caption, "pngs": [],
                            "note": f"the same q-map as {qmap_as} (same hash): drawn there"})
            continue
        kw = {"fits": fits} if kind == "g2" else (
            {"analysis": analysis} if kind == "diffusion" else {})
        todo.append((kind, caption, kw))
    if has_twotime(res) and (kinds is None or "twotime" in kinds):
        # a file with only an age x lag map (correlate --twotime-ages): export's twotime
        # figure draws that map, C(age, lag), with g2 of the map over all ages
        only = age_lag_only(res)
        for k, b in enumerate(map_bins(res)[:MAX_TWOTIME].tolist()):
            cap = (f"two-time age \u00d7 lag map C(age, lag) and its g2 over all ages, bin {b} "
                   "(no full map in the file)" if only
                   else f"two-time C(t\u2081, t\u2082), bin {b}")
            todo.append(("twotime", cap, {"bin_index": k, "max_size": 256}))
    out = list(skipped)
    for kind, caption, kw in todo:
        try:
            out.append({"kind": kind, "caption": caption,
                        "pngs": figure_pngs(kind, res, dpi, **kw), "note": ""})
        except Exception as exc:  # the file's data cannot give this plot: say so
            out.append({"kind": kind, "caption": caption, "pngs": [],
                        "note": f"not drawn: {_why(exc)}"})
    return out


def _read(p: Path) -> tuple[Any, dict[str, Any] | None]:
    from xpcsviewer.io import read_result
    from xpcsviewer.io.errors import XpcsFileError, display_path

    try:
        return read_result(p), None
    except XpcsFileError as exc:
        return None, {"path": str(p), "error": exc.one_line()}
    except OSError as exc:
        return None, {"path": str(p),
                      "error": f"{display_path(p)}: cannot be read ({exc.strerror or exc})"}


def _ages(res: Any, p: Path) -> dict[str, Any] | None:
    """g2 by sample age of a file with two-time data (5 equal windows, model auto, the
    linear law: what ``xpcsviewer ages`` gives by default); None without two-time."""
    from xpcsviewer.views.age_lag_map import has_twotime

    if not has_twotime(res):
        return None
    from xpcsviewer.jobs.ages import ages_file

    try:
        out = ages_file(p, res)
    except Exception as exc:  # the map cannot be cut: the section says why
        return {"error": _why(exc)}
    f, c = out.fits, out.cuts
    rows = []
    for j, b in enumerate(c.bins):
        lf = f.laws[f.law][j]
        name = lf.slope_name
        lo, hi = lf.interval.get(name, (float("nan"), float("nan")))
        rows.append({"bin": int(b), "q": _f(out.q[j]), "verdict": str(f.verdict[j]),
                     "slope_name": name, "slope": _f(lf.value.get(name, float("nan"))),
                     "slope_lo95": _f(lo), "slope_hi95": _f(hi),
                     "tau0_s": _f(lf.value.get("tau0", float("nan"))),
                     "n_points": int(lf.n_points),
                     "converged": int(np.sum(f.status[0, :, j] == "converged")),
                     "flagged": int(np.sum(f.disagree[:, j]))})
    # the constant-age cuts' contrasts that converged (the summary's contrast of a
    # file with two-time data only)
    ok = f.status[0] == "converged"
    cs = sorted(float(v) for v in np.asarray(f.contrast[0], float)[ok] if np.isfinite(v))
    return {"source": out.source, "law": f.law, "windows": int(c.windows.n), "contrast": cs,
            "window_s": [[_f(lo), _f(hi)] for lo, hi in zip(c.windows.lo, c.windows.hi,
                                                              strict=True)],
            "tau_error_source": f.tau_err_source, "bins": rows, "outcome": out}


def _ages_figure(res: Any, ages: dict[str, Any], out: Any, dpi: float
                 ) -> list[dict[str, Any]]:
    """The ages figure of the first bin with a law (else the first bin), drawn from the
    analysis the table came from (not analysed again)."""
    from xpcsviewer.jobs.ages_bin import AgesOutcome
    from xpcsviewer.views.age_lag_map import map_bins

    rows = ages["bins"]
    k = next((i for i, r in enumerate(rows) if r["verdict"] != "undetermined"), 0)
    cap = (f"g\u2082 by sample age, bin {rows[k]['bin']}: the map with the age windows, "
           "\u03c4 against age with the law, the cuts at constant age and constant t\u2081")
    shown = map_bins(res).tolist()  # the figure's bin index counts the bins it draws
    if rows[k]["bin"] not in shown:
        return [{"kind": "ages", "caption": cap, "pngs": [],
                 "note": f"not drawn: bin {rows[k]['bin']} has no map the figure draws"}]
    o = AgesOutcome(None, "age x lag map" if out.source == "age_lag" else "full map",
                    out.n_frames, float(out.cuts.frame_time), out.cuts, out.fits)
    try:
        pngs = figure_pngs("ages", res, dpi, bin_index=shown.index(rows[k]["bin"]),
                           max_size=256, ages=o)
        return [{"kind": "ages", "caption": cap, "pngs": pngs, "note": ""}]
    except Exception as exc:  # the file's data cannot give this plot: say so
        return [{"kind": "ages", "caption": cap, "pngs": [], "note": f"not drawn: {_why(exc)}"}]


def _fit_part(res: Any, p: Path, dpi: float, figures: bool) -> dict[str, Any]:
    """Fits, verdict of D(q), data quality and the figures that need the fits."""
    out: dict[str, Any] = {"bins": [], "notes": [], "multitau": res.multitau is not None}
    fits = analysis = None
    if res.multitau is not None:
        from xpcsviewer.fitting.block_fits import fit_curves
        from xpcsviewer.fitting.blocks import g2_blocks
        from xpcsviewer.fitting.spec import FitSpec
        from xpcsviewer.views.diffusion import diffusion_analysis

        try:
            fits = fit_curves(g2_blocks([res]), FitSpec("auto"))
            analysis = diffusion_analysis(fits)
            out["bins"] = _bins(fits)
        except Exception as exc:  # degenerate g2 (all NaN): the rest is still reported
            out["notes"].append(f"g2 not fitted: {_why(exc)}")
    else:
        out["notes"].append("no multi-tau g2 in the file (two-time only): no per-bin g2 "
                            "fits or \u03c4(q); its ageing is under g\u2082 by sample age")
    out["diffusion"] = _diffusion(analysis, res)
    out["ages"] = _ages(res, p)
    # the analysis itself stays here (a section is plain data: pickled, written)
    outcome = out["ages"].pop("outcome", None) if out["ages"] else None
    out["figures"] = _figures(res, fits, analysis, dpi, kinds=FIT_FIGURES) if figures else []
    if figures and outcome is not None and out["ages"].get("bins"):
        out["figures"] += _ages_figure(res, out["ages"], outcome, dpi)
    if fits is not None:
        from xpcsviewer.fitting import diffusion_from_fit
        from xpcsviewer.fitting.results import fit_record
        from xpcsviewer.jobs.fitfile import record_bins

        rec = fit_record(str(p), fits, diffusion_from_fit(fits.q, fits), None)
        rec["bins"] = [int(c) + 1 for c in fits.columns]
        out["series_bins"] = record_bins(rec)
    return out


#: Pixels of the audit listed per file (by leverage).
AUDIT_TOP = 10


def _audit(res: Any, p: Path) -> list[tuple[str, str]]:
    """The pixel audit of the file's per-pixel G2 stack (``xpcsviewer audit``'s), as
    (name, text) rows: a summary, then the pixels of most leverage on their bin's g2."""
    mt = res.multitau
    if mt is None or not getattr(mt, "has_unnormalized_G2", False):
        return [("pixel audit", "not done: the file has no per-pixel G2 stack "
                                "(correlate --save-g2-pixel)")]
    from xpcsviewer.compute.detector.pixel_audit import audit_table_rows
    from xpcsviewer.jobs.pixel_audit import audit_file

    try:
        a = audit_file(p)
    except Exception as exc:  # an unreadable stack: say so, report the rest
        return [("pixel audit", f"not done: {_why(exc)}")]
    n, nf = int(a.leverage.size), int(np.count_nonzero(a.flagged))
    out = [("pixel audit", f"{n} pixels scored (drop-one leverage on their bin's g2, hot "
                           f"against their bin): {nf} flagged (leverage > {a.leverage_flag:g} "
                           f"error or z > {a.hot_z:g}); the {AUDIT_TOP} of most leverage:")]
    for r in audit_table_rows(a, top=AUDIT_TOP)[1:]:
        _, b, row, cc, q, lev, z, why = r
        lev_text = "\u2013" if lev is None else f"{lev:.3g}"
        out.append((f"bin {b}, pixel ({row}, {cc})",
                    f"q {q:.4g}, leverage {lev_text}, z {z:.3g}" + (f": {why}" if why else "")))
    return out


def _image_part(res: Any, p: Path, dpi: float, figures: bool, saxs1d: bool,
                qmap_as: str | None = None) -> dict[str, Any]:
    """Provenance (the checksum), stability, quality (with the pixel audit where the file
    has a per-pixel stack) and the figures without fits."""
    prov = _provenance(res, p, sha256_of(p))
    quality = _quality(res, prov)
    quality["audit"] = _audit(res, p)
    kinds = (*(k for k, _ in FIGURE_ORDER if k not in FIT_FIGURES), "twotime")
    from xpcsviewer.report.raw_section import raw_part
    from xpcsviewer.report.xsvs_section import xsvs_part_of_result

    return {"label": res.label, "provenance": prov, "raw": raw_part(res),
            "xsvs": xsvs_part_of_result(res, p, dpi, figures),
            "sample": {k: (v if isinstance(v, (int, float, str)) else str(v))
                       for k, v in dict(res.sample).items()},
            # issue 49: "sample D 98100856.77" read without its unit
            "sample_units": {k: str(v) for k, v in dict(res.sample_units).items()},
            "stability": _stability(res), "quality": quality,
            "figures": (_figures(res, None, None, dpi, saxs1d, kinds, qmap_as)
                        if figures else [])}


def merge_parts(path: str, fit: dict[str, Any], image: dict[str, Any]) -> dict[str, Any]:
    """One file's section from its two parts (figures in :data:`FIGURE_ORDER`); a raw
    source's is its image part."""
    if image.get("kind") == "raw":
        return image
    for part in (fit, image):
        if "error" in part:
            return {"path": str(path), "error": part["error"]}
    order = {k: i for i, (k, _) in enumerate((*FIGURE_ORDER, ("twotime", ""), ("ages", "")))}
    figs = sorted(fit["figures"] + image["figures"], key=lambda f: order[f["kind"]])
    return {"path": str(path), **image, **fit, "figures": figs}


def file_part(path: str, part: str, dpi: float = 100.0, figures: bool = True,
              saxs1d: bool = True, qmap_as: str | None = None) -> dict[str, Any]:
    """One of the two independent halves of a file's section: ``"fits"`` or
    ``"images"`` (two processes can draw one file); ``error`` when unreadable.
    ``qmap_as``: an earlier file with the same q-map (its figure is not drawn again).
    """
    p = Path(path)
    from xpcsviewer.report.raw_section import is_raw_source, raw_source_section

    if is_raw_source(p):  # a raw source given itself: its Raw data section alone
        return raw_source_section(p) if part == "images" else {"kind": "raw"}
    res, err = _read(p)
    if err is not None:
        return err
    try:
        if part == "fits":
            return _fit_part(res, p, dpi, figures)
        return _image_part(res, p, dpi, figures, saxs1d, qmap_as)
    except OSError as exc:  # the file went away between reads
        return {"path": str(p), "error": f"{p}: cannot be read ({exc.strerror or exc})"}


def file_section(path: str, dpi: float = 100.0, figures: bool = True,
                 saxs1d: bool = True) -> dict[str, Any]:
    """Everything the report shows of one file (see the module docstring).

    Returns a dict with ``error`` (one line) when the file cannot be read; otherwise
    ``provenance``, ``bins`` (every fitted bin: status, reason, quotable numbers),
    ``diffusion``, ``stability``, ``quality``, ``figures`` and ``series_bins`` (the
    rows the Series figure reads). ``saxs1d`` False: no I(q) figure (a set draws the
    I(q) of all its files in one).
    """
    return merge_parts(path, file_part(path, "fits", dpi, figures),
                       file_part(path, "images", dpi, figures, saxs1d))
