"""What the report says, as rows of text: one source for the HTML and the PDF.

Every number is formatted here once (:func:`fmt`), so the two renderings carry the
same text, and each bin row names its file and bin (traceable to the fit table).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

__all__ = [
    "AGEING_COLUMN",
    "AGES_COLUMNS",
    "BIN_COLUMNS",
    "SUMMARY_COLUMNS",
    "ages_rows",
    "ages_text",
    "ages_verdicts",
    "bin_rows",
    "failed_text",
    "file_summary",
    "fmt",
    "fmt_pm",
    "provenance_rows",
    "quality_rows",
    "software_versions",
    "summary_columns",
    "summary_rows",
    "tau_shown",
]

SUMMARY_COLUMNS = ("file", "contrast", "\u03c4 per q-bin (s)", "diffusive?", "D, radius",
                   "damaged?", "bins", "failed bins: why")
#: The summary's column of two-time files' ageing verdicts (only in a set with one).
AGEING_COLUMN = "ageing (two-time): law per bin"
BIN_COLUMNS = ("file", "bin", "q (\u00c5\u207b\u00b9)", "\u03c6 (deg)", "model", "status",
               "reason", "contrast", "\u03c4 (s)", "\u03c7\u00b2\u1d63")


def fmt(v: Any, digits: int = 4) -> str:
    """A number as the report prints it (``digits`` significant); "\u2013" for none."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "\u2013"
    return f"{float(v):.{digits}g}"


def fmt_pm(v: Any, e: Any, digits: int = 3) -> str:
    """``v ± e``; ``v`` alone without an error."""
    if v is None:
        return "\u2013"
    return fmt(v, digits) if e is None else f"{fmt(v, digits)} \u00b1 {fmt(e, 2)}"


def software_versions() -> dict[str, str]:
    """Versions of the software that made the report (jax by its metadata: not imported)."""
    import platform
    from importlib import metadata

    import xpcsviewer

    out = {"xpcsviewer": xpcsviewer.__version__, "python": platform.python_version()}
    for name in ("numpy", "jax", "h5py", "matplotlib", "scipy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _conv(sec: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in sec["bins"] if b["status"] == "converged"]


def tau_shown(b: dict[str, Any]) -> bool:
    """The bin's headline tau may be printed as a value: the fit table's one rule
    (:func:`~xpcsviewer.fitting.status_limits.tau_quotable`), checked again here so that
    no text of the report quotes a tau its status does not allow (issue 49)."""
    from xpcsviewer.fitting.status_limits import tau_quotable

    return b["tau"] is not None and tau_quotable(b["status"], b["reason"], b["tau_name"],
                                                 b.get("limit_name", ""))


def _tau_text(b: dict[str, Any]) -> str:
    if tau_shown(b):
        return fmt_pm(b["tau"], b["tau_err"])
    return b["limit"] or "\u2013"


def _summary_tau(b: dict[str, Any]) -> str:
    """A bin's tau in the summary: the quotable value (a bin that did not converge marked
    by the limit on its other time, else by its status), or the limit alone."""
    if not tau_shown(b):
        return b["limit"]
    text = fmt_pm(b["tau"], b["tau_err"])
    if b["status"] == "converged":
        return text
    return f"{text} ({b['limit'] or b['status']})"


def failed_text(sec: dict[str, Any]) -> str:
    """Bins that are not ``converged``, grouped by status with their bin numbers and the
    first reason of each status."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for b in sec["bins"]:
        if b["status"] != "converged":
            groups.setdefault(b["status"], []).append(b)
    if not groups:
        return "none" if sec["bins"] else "no fitted bins"
    parts = []
    for st, bs in groups.items():
        nums = ", ".join(str(b["bin"]) for b in bs)
        why = next((b["reason"] for b in bs if b["reason"]), "")
        parts.append(f"{st} (bins {nums})" + (f": {why}" if why else ""))
    return "; ".join(parts)


def file_summary(sec: dict[str, Any]) -> dict[str, str]:
    """The summary line of one file (keys: :data:`SUMMARY_COLUMNS` and
    :data:`AGEING_COLUMN`)."""
    row = _file_summary(sec)
    verdicts = ages_verdicts(sec)
    row[AGEING_COLUMN] = "; ".join(verdicts) or "\u2013"
    if verdicts and not sec.get("multitau", True):
        row.update(_twotime_only(sec))
    return row


def _twotime_only(sec: dict[str, Any]) -> dict[str, str]:
    """The cells of a file with two-time data and no multi-tau g2 (issue 49: they read
    "\u2013", "cannot tell: no g2 fits", "no fitted bins"): the contrast of its
    converged constant-age cuts, its two-time bins and the bins without a law."""
    a = sec["ages"]
    cs = a.get("contrast") or []
    if cs:
        contrast = (f"{fmt(statistics.median(cs), 3)} (median of {len(cs)} converged "
                    f"constant-age cuts; {fmt(cs[0], 3)}\u2013{fmt(cs[-1], 3)})")
    else:
        contrast = "\u2013 (no constant-age cut converged)"
    rows = a.get("bins", [])
    lawless = [str(r["bin"]) for r in rows if not _has_law(r)]
    return {
        "contrast": contrast,
        "\u03c4 per q-bin (s)": "two-time only: \u03c4 against age in the ageing column",
        "diffusive?": "not tested: no multi-tau g2 (two-time only)",
        "bins": f"{len(rows)} two-time bins, {len(rows) - len(lawless)} with an ageing law",
        "failed bins: why": (f"no ageing law: bin{'s' if len(lawless) > 1 else ''} "
                             f"{', '.join(lawless)} (why: the ageing column)"
                             if lawless else "none"),
    }


def _file_summary(sec: dict[str, Any]) -> dict[str, str]:
    if "error" in sec:
        return dict.fromkeys(SUMMARY_COLUMNS, "") | {"file": sec["path"],
                                                  "failed bins: why": sec["error"]}
    if sec.get("kind") == "raw":
        n = sum(1 for r in sec["raw"]["findings"][1:])
        return dict.fromkeys(SUMMARY_COLUMNS, "\u2013") | {
            "file": sec["label"], "bins": "raw source",
            "failed bins: why": f"{n} raw-data findings (its Raw data section)"}
    conv = _conv(sec)
    cs = sorted(b["contrast"] for b in conv if b["contrast"] is not None)
    if cs:
        lo, hi = cs[0], cs[-1]
        med = statistics.median(cs)
        contrast = f"{fmt(med, 3)} (median of {len(cs)} converged; {fmt(lo, 3)}\u2013{fmt(hi, 3)})"
    else:
        contrast = "\u2013 (no converged bin)"
    taus = [f"{b['bin']}: {_summary_tau(b)}" for b in sec["bins"]
            if tau_shown(b) or b["limit"]]
    d = sec["diffusion"]
    diff = {"diffusive": "yes", "not_diffusive": "no", "too_few_bins": "cannot tell",
            "no_fits": "cannot tell"}.get(d["verdict"], d["verdict"])
    d_text = "\u2013"
    if d["verdict"] == "diffusive":
        d_text = d["message"]
        if d.get("radius_nm") is not None:
            d_text += f"; radius {fmt_pm(d['radius_nm'], d.get('radius_err_nm'))} nm"
        elif d.get("radius_note"):
            d_text += f"; {d['radius_note']}"
    st = sec["stability"]["verdict"]
    damaged = {"damaged": "yes", "stable": "no", "unknown": "cannot tell"}[st]
    n = len(sec["bins"])
    return {
        "file": sec["label"], "contrast": contrast,
        "\u03c4 per q-bin (s)": "; ".join(taus) or "\u2013",
        "diffusive?": f"{diff}: " + (f"b = {fmt_pm(d['exponent'], d.get('exponent_err'))}"
                                     if d.get("exponent") is not None
                                     and d["verdict"] != "too_few_bins" else d["message"]),
        "D, radius": d_text,
        "damaged?": f"{damaged}: {sec['stability']['summary']}",
        "bins": f"{len(conv)}/{n} converged" if n else "0",
        "failed bins: why": failed_text(sec),
    }


def summary_columns(sections: list[dict[str, Any]]) -> tuple[str, ...]:
    """:data:`SUMMARY_COLUMNS`, with :data:`AGEING_COLUMN` after the taus where a file
    of the set has two-time data (a column no file fills is left out)."""
    if not any(s.get("ages") for s in sections):
        return SUMMARY_COLUMNS
    k = SUMMARY_COLUMNS.index("\u03c4 per q-bin (s)") + 1
    return (*SUMMARY_COLUMNS[:k], AGEING_COLUMN, *SUMMARY_COLUMNS[k:])


def summary_rows(sections: list[dict[str, Any]]) -> list[list[str]]:
    """One row per file (:func:`summary_columns`)."""
    cols = summary_columns(sections)
    return [[file_summary(s).get(c, "\u2013") for c in cols] for s in sections]


def bin_rows(sec: dict[str, Any]) -> list[tuple[list[str], dict[str, Any]]]:
    """(cells of :data:`BIN_COLUMNS`, the bin's record) for every bin of one file."""
    out = []
    for b in sec.get("bins", []):
        tau = _tau_text(b)
        if b["tau_name"] != "tau" and b["tau"] is not None:
            tau = f"{b['tau_name']} {tau}"
        out.append(([sec["label"], str(b["bin"]), fmt(b["q"]), fmt(b["phi"], 3), b["model"],
                     b["status"], b["reason"], fmt_pm(b["contrast"], b["contrast_err"]),
                     tau, fmt(b["chi2_red"], 3)], b))
    return out


def status_counts(sections: list[dict[str, Any]]) -> Counter:
    """Bins per status over all files."""
    return Counter(b["status"] for s in sections if "bins" in s for b in s["bins"])


def sample_rows(sec: dict[str, Any]) -> list[tuple[str, str]]:
    """("sample D", "9.81009e+07 Å^2/s"): the file's sample fields, each number with the
    unit the file states (issue 49: a bare "98100856.77" read as nothing)."""
    units = sec.get("sample_units", {})
    rows = []
    for k, v in sec.get("sample", {}).items():
        text = f"{v:.6g}" if isinstance(v, float) else str(v)
        rows.append(("sample " + k, f"{text} {units[k]}" if units.get(k) else text))
    return rows


def provenance_rows(sec: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, value) of where the file came from and what it was reduced with."""
    p = sec["provenance"]
    lo, hi = p["q_range"]
    rows = [
        ("file", p["file"]), ("SHA-256", p["sha256"]),
        ("size", f"{p['size_bytes'] / 1e6:.3g} MB"), ("layout", p["layout"]),
        ("analysis", ", ".join(p["analysis"])), ("start time", p["start_time"] or "\u2013"),
        ("frame time", f"{fmt(p['frame_time_s'])} s"),
        ("detector", f"{p['detector_shape'][0]} \u00d7 {p['detector_shape'][1]} pixels of "
                     f"{fmt((p['pixel_size_m'] or 0) * 1e6, 3)} \u00b5m"),
        ("geometry", f"{fmt(p['energy_keV'])} keV, {fmt(p['distance_m'])} m, beam centre "
                     f"({fmt(p['beam_center'][0])}, {fmt(p['beam_center'][1])}) px"),
        ("q-map", f"{p['n_dynamic']} dynamic / {p['n_static']} static bins, q "
                  f"{fmt(lo)}\u2013{fmt(hi)} \u00c5\u207b\u00b9"
                  + (f", hash {p['qmap_hash']}" if p["qmap_hash"] else "")),
        ("mask", f"{p['mask_valid']} of {p['mask_total']} pixels valid, "
                 f"{p['pixels_in_bins']} in the dynamic bins"),
    ]
    if p.get("age_lag"):
        rows.append(("two-time", p["age_lag"]))
    rows += [("software in the file", s) for s in p.get("software", [])]
    rows += sample_rows(sec)
    rows += [("warning", w) for w in p["warnings"]]
    return rows


def quality_rows(sec: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, value) of the data-quality section of one file."""
    q = sec.get("quality", {})
    rows = [("masked pixels", f"{100 * q.get('masked_fraction', 0):.2f} % of the detector")]
    if "g2_points" in q:
        rows.append(("g2 points", f"{q['g2_points']}: {q['invalid_points']} invalid in the file, "
                                  f"{q['suspect_points']} with an implausibly small error "
                                  "(left out of the fits)"))
    for a in q.get("audit", []):
        rows.append(a)
    return rows


AGES_COLUMNS = ("bin", "q (\u00c5\u207b\u00b9)", "verdict", "law slope [95 %]", "\u03c4\u2080 (s)",
                "\u03c4 converged", "ways disagree")


def ages_text(sec: dict[str, Any]) -> str | None:
    """The line above the ages table (None: the file has no two-time data)."""
    a = sec.get("ages")
    if not a:
        return None
    if "error" in a:
        return f"g2 by age not analysed: {a['error']}"
    law = "\u03c4 = \u03c4\u2080 + a\u00b7t_w" if a["law"] == "linear" else \
        "\u03c4 = \u03c4\u2080\u00b7t_w^\u03bc"
    src = a["tau_error_source"]
    errs = "the fits" if src == "fit" else src
    return (f"{a['windows']} equal age windows of the {a['source']}, each cut at constant "
            f"age and at constant t\u2081 and fitted (model auto); law {law} of the "
            f"constant-age \u03c4 (an unresolved one as a lower limit) with its 95 % "
            f"interval; \u03c4 errors from {errs}. "
            "Verdict: ageing (\u03c4 grows), accelerating (\u03c4 falls), stationary "
            "(the slope's 99 % interval holds 0) or undetermined (fewer than 3 drawn "
            "\u03c4, or 2 resolved).")


def _slope_text(r: dict[str, Any]) -> str:
    """"a = 0.611 [0.338, 0.885]": the law's slope and its 95 % interval."""
    name = "a" if r["slope_name"] == "a" else "\u03bc"
    return (f"{name} = {fmt(r['slope'], 3)} [{fmt(r['slope_lo95'], 3)}, "
            f"{fmt(r['slope_hi95'], 3)}]" if r["slope"] is not None else "\u2013")


def _has_law(r: dict[str, Any]) -> bool:
    return r["verdict"] != "undetermined" and r["slope"] is not None


def ages_verdicts(sec: dict[str, Any]) -> list[str]:
    """Each two-time bin's result of the ages table in a few words (the summary's
    ageing column): "bin 2: ageing (a = 0.611 [0.338, 0.885])", or "bin 1: no law
    (...)" with why; [] without two-time data."""
    a = sec.get("ages")
    if not a:
        return []
    if "error" in a:
        return [f"not analysed: {a['error']}"]
    out = []
    for r in a.get("bins", []):
        if _has_law(r):
            out.append(f"bin {r['bin']}: {r['verdict']} ({_slope_text(r)})")
        else:  # the verdict's rule: 3 tau drawn, 2 of them resolved
            out.append(f"bin {r['bin']}: no law: {r.get('n_points', 0)} \u03c4 drawn, "
                       f"{r['converged']} of {a['windows']} windows converged (a law needs "
                       "3 drawn, 2 resolved)")
    return out


def ages_rows(sec: dict[str, Any]) -> list[list[str]]:
    """One row per two-time bin, in :data:`AGES_COLUMNS` order."""
    a = sec.get("ages") or {}
    out = []
    for r in a.get("bins", []):
        slope = _slope_text(r)
        out.append([str(r["bin"]), fmt(r["q"]), r["verdict"], slope, fmt(r["tau0_s"], 3),
                    f"{r['converged']} of {a['windows']}",
                    f"{r['flagged']} of {a['windows']}"])
    return out
