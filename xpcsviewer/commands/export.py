"""``xpcsviewer export``: render the GUI's export figures for many files, off-screen.

Plots that overlay files (``saxs1d``, ``intensity``, ``g2``, ``diffusion``) give
one combined figure ``combined_<kind>.<fmt>``; the others (``saxs2d``,
``stability``, ``twotime``, ``ages``, ``qmap``, ``g2map``, ``g2stability``) one figure per
file, ``<label>_<kind>.<fmt>``, with the figure's defaults (e.g. the first
q-bin). For ``g2`` and ``diffusion`` the curves are first fitted with the automatic
model choice (``auto``: the default of the g2 tab, ``fit`` and ``report``; the same
batched least-squares fit), so the figures show the fits and the diffusion coefficient.

Unreadable files are reported (one line each) and the rest are still exported;
the exit code is then 3. A file whose data cannot give a plot (all-NaN or zero
g2, no error bars, nothing to fit) is left out of that plot with a note naming
the file and the plot, the rest is exported, and the exit code is 3. A file
that lacks the data of a plot (two-time of a multitau-only file, partial g2
snapshots for ``g2stability``) is skipped with a note and does not change the
exit code. Existing figures are refused (exit 2) unless ``--overwrite``: any file of an
earlier export under a figure's name (``NAME.png`` or any page ``NAME_pN.png``); with
``--overwrite`` the new set replaces it and its pages the new set does not hold are
removed, so a page set on disk is always one export's. Pages are written as one set
(all rendered, then renamed into place).

The figures draw what they are handed: the fits, the diffusion analysis, the ages of
the first two-time bin (5 equal windows, model auto, as the Two-Time tab starts) and the
fits of the partial g2 snapshots are computed here first.

``--size`` picks the page (:data:`xpcsviewer.export.SIZE_PRESETS`; default
``double``, 7 in wide). A g2 figure with more panels than a page holds is a
multi-page PDF, or numbered files ``combined_g2_p1.png``, ``_p2`` ... .
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import (
    OutputRefusedError,
    OutputWriteError,
    check_output,
    display_path,
)
from xpcsviewer.progress import (
    Cancelled,
    CancelToken,
    ProgressCallback,
    TextProgressBar,
    report,
)

__all__ = ["COMBINED_KINDS", "ExportReport", "export_figures", "run"]

PROG = "xpcsviewer export"
COMBINED_KINDS = ("saxs1d", "intensity", "g2", "diffusion")


class ExportReport:
    """What :func:`export_figures` did: written paths, failures and skips."""

    def __init__(self) -> None:
        self.written: list[Path] = []
        self.errors: list[str] = []  # one line each: bad input
        self.skipped: list[str] = []  # a plot that does not apply to a file
        self.undrawable: list[str] = []  # a plot the file's data cannot give
        self.refused: list[str] = []  # an output that must not be written

    @property
    def ok(self) -> bool:
        """True when no input was bad and every applicable figure was drawn."""
        return not (self.errors or self.undrawable or self.refused)

    @property
    def exit_code(self) -> int:
        """2 for a refused output, 3 for bad or undrawable data, else 0."""
        if self.refused:
            return 2
        return 0 if self.ok else 3


def _needs(kind: str, res: Any) -> str | None:
    """Why ``kind`` cannot be drawn for ``res`` (None: it can)."""
    from xpcsviewer.views.age_lag_map import has_twotime

    if kind in ("g2", "diffusion", "g2map") and res.multitau is None:
        return "no multitau g2"
    if kind == "g2stability" and (
        res.multitau is None or res.multitau.g2_partial is None
    ):
        return "no partial g2 snapshots"
    if kind in ("twotime", "ages") and not has_twotime(res):  # full or age x lag map
        return "no two-time data"
    return None


def _unique_labels(results: Sequence[Any]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for r in results:
        lab = (
            "".join(c if c.isalnum() or c in "-_." else "_" for c in r.label) or "file"
        )
        n = seen.get(lab, 0) + 1
        seen[lab] = n
        out.append(lab if n == 1 else f"{lab}_{n}")
    return out


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return display_path(text)[:200]


def export_figures(
    files: Sequence[str | Path],
    kinds: Sequence[str],
    out_dir: str | Path,
    fmt: str = "png",
    *,
    overwrite: bool = False,
    size: str | None = "double",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> ExportReport:
    """Render ``kinds`` for ``files`` into ``out_dir`` (created if needed).

    Parameters
    ----------
    files : sequence of path
        Result files; unreadable ones are listed in ``errors``.
    kinds : sequence of str
        Plot kinds of :data:`xpcsviewer.export.FIGURE_KINDS`.
    out_dir : path
    fmt : {"png", "svg", "pdf"}
    overwrite : bool
        Replace figures that already exist in ``out_dir`` (else they are
        refused, see :func:`xpcsviewer.io.outputs.check_output`).
    size : {"single", "double", "slide"} or None
        Page preset (None: each figure's own size).
    progress, cancel
        One step per figure (plus one per file read); cancel checked between them.

    Returns
    -------
    ExportReport
        A file whose data cannot give a plot (all-NaN g2, no valid fits) is
        left out of that plot with a note in ``undrawable``; everything else
        is still exported.
    """
    from xpcsviewer.export import make_figures
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io import read_result

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputRefusedError(f"{display_path(out)}: is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    rep = ExportReport()
    kinds = list(dict.fromkeys(kinds))
    per_file = [k for k in kinds if k not in COMBINED_KINDS]
    combined = [k for k in kinds if k in COMBINED_KINDS]
    n_files = len(files)
    total = n_files + len(combined) + len(per_file) * n_files
    done = 0
    results = []
    for p in files:
        report(progress, cancel, done, total, f"reading {display_path(Path(p).name)}")
        try:
            results.append(read_result(p))
        except XpcsFileError as exc:
            rep.errors.append(exc.one_line())
        except OSError as exc:
            rep.errors.append(f"{display_path(p)}: cannot be read ({exc})")
        done += 1
    total = n_files + len(combined) + len(per_file) * len(results)
    labels = _unique_labels(results)

    def save(pages: list[Any], name: str) -> None:
        try:
            rep.written += _save_pages(pages, out / f"{name}.{fmt}", files, overwrite)
        except OutputRefusedError as exc:
            rep.refused.append(str(exc))

    fits: dict[tuple[int, ...], Any] = {}

    def draw(kind: str, usable: list[Any], name: str) -> None:
        g2_fits = None
        if kind in ("g2", "diffusion"):
            key = tuple(id(r) for r in usable)
            if key not in fits:  # g2 and diffusion of the same files share one fit
                # the window's, fit's and report's default (issue 49): one published figure
                fits[key] = fit_curves(g2_blocks(usable), FitSpec("auto"), cancel=cancel)
            g2_fits = fits[key]
        save(make_figures(kind, usable, size, **_figure_inputs(kind, usable, g2_fits)), name)

    for kind in combined:
        report(progress, cancel, done, total, f"{kind} (all files)")
        done += 1
        usable = [r for r in results if _needs(kind, r) is None]
        if not usable:
            rep.skipped.append(f"{kind}: no file has the data")
            continue
        try:
            draw(kind, usable, f"combined_{kind}")
            continue
        except XpcsFileError as exc:
            rep.errors.append(exc.one_line())
            continue
        except (Cancelled, KeyboardInterrupt, MemoryError, OutputWriteError):
            raise
        except Exception:  # find the files that cannot be drawn
            pass
        keep = []
        for r in usable:
            try:
                _probe(kind, r, cancel)
                keep.append(r)
            except (Cancelled, KeyboardInterrupt, MemoryError, OutputWriteError):
                raise
            except Exception as exc:  # degenerate data of one file
                rep.undrawable.append(
                    f"{kind}: {display_path(r.path)}: cannot be drawn ({_why(exc)})"
                )
        if keep:
            try:
                draw(kind, keep, f"combined_{kind}")
            except (Cancelled, KeyboardInterrupt, MemoryError, OutputWriteError):
                raise
            except Exception as exc:  # only the combination fails
                rep.undrawable.append(f"{kind}: the combined figure ({_why(exc)})")
    for kind in per_file:
        for res, lab in zip(results, labels, strict=True):
            report(progress, cancel, done, total, f"{kind} {lab}")
            done += 1
            why = _needs(kind, res)
            if why is not None:
                rep.skipped.append(f"{kind}: {display_path(res.path)}: {why}")
                continue
            try:
                save(make_figures(kind, [res], size, **_figure_inputs(kind, [res])),
                     f"{lab}_{kind}")
            except XpcsFileError as exc:
                rep.errors.append(exc.one_line())
            except (Cancelled, KeyboardInterrupt, MemoryError, OutputWriteError):
                raise
            except Exception as exc:  # degenerate data of this file
                rep.undrawable.append(
                    f"{kind}: {display_path(res.path)}: cannot be drawn ({_why(exc)})"
                )
    report(progress, cancel, total, total, "done")
    return rep


def _check_figure(target: Path, inputs: Sequence[str | Path], overwrite: bool,
                  n_pages: int | None = None) -> None:
    """Refuse the figure at ``target`` as a whole: without ``overwrite`` when any file of
    an earlier export under its name exists (the file itself or any page ``_pN``, also
    one the new set will not hold), and always when a page would be an input.

    Raises
    ------
    OutputRefusedError
        Naming every file of the earlier export (up to six).
    """
    from xpcsviewer.export.files import figure_files, page_paths

    there = figure_files(target)
    if there and not overwrite:
        names = ", ".join(p.name for p in there[:6])
        more = f" and {len(there) - 6} more" if len(there) > 6 else ""
        raise OutputRefusedError(
            f"{display_path(target)}: an earlier export of this figure exists "
            f"({len(there)} file(s): {names}{more}); refusing to replace it (use "
            "--overwrite: the new pages replace it and its other pages are removed)")
    new = page_paths(target, n_pages) if n_pages else [target]
    for p in dict.fromkeys([*new, *there]):
        check_output(p, inputs, overwrite)


def _save_pages(pages: list[Any], target: Path, inputs: Sequence[str | Path],
                overwrite: bool) -> list[Path]:
    """Write the pages of one figure as one set (refused as a whole if any file of an
    earlier export under its name exists, without ``overwrite``; its pages the new set
    does not hold are removed), then clear them; returns the files written."""
    from xpcsviewer.export.files import save_figure_pages

    try:
        _check_figure(target, inputs, overwrite, len(pages))
        return save_figure_pages(pages, target)
    finally:
        for f in pages:
            f.clear()


def _figure_inputs(kind: str, results: list[Any], g2_fits: Any = None) -> dict[str, Any]:
    """What the figure of ``kind`` is handed: the g2 fits, their D(q) analysis (the
    Diffusion tab's, with its defaults), the ages of the first two-time bin (the Two-Time
    tab's defaults), the fits of the partial g2 snapshots or the averaging screen;
    figures compute none (ADR-8)."""
    from xpcsviewer.jobs.figure_inputs import average_screen, stability_fit
    from xpcsviewer.views.diffusion import diffusion_analysis

    if kind == "g2":
        return {"fits": g2_fits}
    if kind == "diffusion":
        return {"analysis": diffusion_analysis(g2_fits)}
    if kind == "ages":
        return {"ages": _first_bin_ages(results[0])}
    if kind == "g2stability":
        return {"fit": stability_fit(results[0])}
    if kind == "average":
        return {"summary": average_screen(results)}
    return {}


def _first_bin_ages(res: Any) -> Any:
    """The ages of the first two-time bin of ``res`` with the Two-Time tab's defaults
    (5 equal windows, model auto, the linear law named)."""
    from xpcsviewer.jobs.ages_bin import bin_request, run_ages

    return run_ages(bin_request(res, 0))


def _probe(kind: str, res: Any, cancel: CancelToken | None) -> None:
    """Build (not save) ``kind`` for one file; raises what drawing it would raise."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from xpcsviewer.export import make_figure
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec

    g2_fits = None
    if kind in ("g2", "diffusion"):
        g2_fits = fit_curves(g2_blocks([res]), FitSpec("single"), cancel=cancel)
    fig = make_figure(kind, [res], **_figure_inputs(kind, [res], g2_fits))
    try:
        FigureCanvasAgg(fig).draw()  # some errors only show when drawn
    finally:
        fig.clear()


def figure_complete(path: Path, fmt: str) -> bool:
    """True when ``path`` is a whole figure of ``fmt`` (start and end markers)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(16)
            fh.seek(max(0, size - 64))
            tail = fh.read()
    except OSError:
        return False
    if fmt == "png":
        return head.startswith(b"\x89PNG") and b"IEND" in tail
    if fmt == "pdf":
        return head.startswith(b"%PDF") and b"%%EOF" in tail
    return head.lstrip().startswith((b"<svg", b"<?xml")) and b"</svg>" in tail


def _saved(target: Path, fmt: str) -> list[Path] | None:
    """The whole files of an earlier export of ``target`` (pages included), or None."""
    from xpcsviewer.export.files import complete_pages

    return complete_pages(target, lambda p: figure_complete(p, fmt))


def export_file_task(options: dict[str, Any], item: dict[str, Any]) -> dict[str, list[str]]:
    """The per-file figures of one file (a batch task; any worker).

    Returns the lists of :class:`ExportReport` (``written`` as path strings)
    plus ``kept``: figures left as they were (``--skip-existing``).

    Raises
    ------
    XpcsFileError
        The file cannot be read.
    """
    from xpcsviewer.export import make_figures
    from xpcsviewer.export.files import figure_files
    from xpcsviewer.io import read_result

    out, fmt, lab = Path(options["out"]), options["fmt"], item["label"]
    rep: dict[str, list[str]] = {k: [] for k in ("written", "skipped", "undrawable",
                                                 "refused", "kept")}
    targets = {k: out / f"{lab}_{k}.{fmt}" for k in options["kinds"]}
    saved = {k: _saved(t, fmt) if options["skip_existing"] else None
             for k, t in targets.items()}
    if all(v is not None for v in saved.values()):
        rep["kept"] = [str(p) for v in saved.values() for p in v]  # not even read
        return rep
    res = read_result(item["path"])
    shown = display_path(item["shown"])
    for kind, target in targets.items():
        why = _needs(kind, res)
        if why is not None:
            rep["skipped"].append(f"{kind}: {shown}: {why}")
            continue
        if saved[kind] is not None:
            rep["kept"] += [str(p) for p in saved[kind]]
            continue
        # --skip-existing redraws a figure whose set is not whole (a page cut short)
        allow = bool(options["overwrite"]
                     or (options["skip_existing"] and figure_files(target)))
        try:
            _check_figure(target, options["inputs"], allow)
        except OutputRefusedError as exc:
            rep["refused"].append(str(exc))
            continue
        try:
            pages = make_figures(kind, [res], options.get("size", "double"),
                                 **_figure_inputs(kind, [res]))
            rep["written"] += [str(p) for p in _save_pages(pages, target, options["inputs"],
                                                          allow)]
        except XpcsFileError as exc:
            raise XpcsFileError(shown, exc.problem, exc.dataset, exc.expected) from exc
        except (Cancelled, KeyboardInterrupt, MemoryError, OutputWriteError):
            raise
        except Exception as exc:  # degenerate data of this file
            rep["undrawable"].append(f"{kind}: {shown}: cannot be drawn ({_why(exc)})")
    return rep


def _unique_path_labels(files: Sequence[str | Path]) -> list[str]:
    from xpcsviewer.model.result import path_label

    class _Named:
        def __init__(self, p: str | Path) -> None:
            self.label = path_label(p)

    return _unique_labels([_Named(p) for p in files])


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer export``; returns the exit code.

    Per-file figures are one batch task per file (:mod:`xpcsviewer.batch`);
    the combined figures (all files in one plot) are drawn here afterwards.
    """
    import os
    from functools import partial

    from xpcsviewer.batch import BatchBar, print_failures, run_batch, where_from_args
    from xpcsviewer.batch._engine import BatchSummary

    quiet = bool(getattr(args, "quiet", False))
    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    skip = bool(getattr(args, "skip_existing", False))
    overwrite = bool(getattr(args, "overwrite", False))
    kinds = list(dict.fromkeys(args.plot))
    per_file = [k for k in kinds if k not in COMBINED_KINDS]
    combined = [k for k in kinds if k in COMBINED_KINDS]
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise OutputRefusedError(f"{display_path(out)}: is a file, not a folder")
    from xpcsviewer.commands._inputs import skip_side_files

    args.files = skip_side_files(args.files, PROG)
    if not args.files:
        return 3
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputWriteError(exc.errno, f"{display_path(out)}: cannot make the folder "
                                          f"({exc.strerror}); nothing written") from None
    rep = ExportReport()
    kept = 0
    summary = BatchSummary(total=len(args.files))
    if per_file:
        size = getattr(args, "size", "double")
        options = {"out": os.path.abspath(out), "fmt": args.format, "kinds": per_file,
                   "size": size,
                   "skip_existing": skip, "overwrite": overwrite,
                   "inputs": [os.path.abspath(p) for p in args.files]}
        items = [{"path": os.path.abspath(p), "shown": os.fspath(p), "label": lab}
                 for p, lab in zip(args.files, _unique_path_labels(args.files), strict=True)]

        def take(o: Any) -> None:
            nonlocal kept
            if o.ok:
                v = o.value
                rep.written += [Path(p) for p in v["written"]]
                rep.skipped += v["skipped"]
                rep.undrawable += v["undrawable"]
                rep.refused += v["refused"]
                kept += len(v["kept"])

        with BatchBar("export", enabled=not quiet) as bar:
            summary = run_batch(partial(export_file_task, options), items, take,
                                where=where, progress=bar)
        from xpcsviewer.io.outputs import sweep_stale_temps

        sweep_stale_temps(out, force=True)
    if combined:
        todo = [k for k in combined
                if not (skip and _saved(out / f"combined_{k}.{args.format}", args.format))]
        kept += len(combined) - len(todo)
        bad = {f.index for f in summary.failures}
        files = [p for i, p in enumerate(args.files) if i not in bad]
        if todo and files:
            with TextProgressBar("export (combined)", enabled=not quiet) as bar:
                crep = export_figures(files, todo, out, args.format, overwrite=overwrite,
                                      size=getattr(args, "size", "double"), progress=bar)
            rep.written += crep.written
            rep.errors += [e for e in crep.errors if e not in rep.errors]
            rep.skipped += crep.skipped
            rep.undrawable += crep.undrawable
            rep.refused += crep.refused
    for line in rep.refused:
        print(f"{PROG}: {line}", file=sys.stderr)
    for line in rep.undrawable:
        print(f"{PROG}: skipped {line}", file=sys.stderr)
    for line in rep.skipped:
        print(f"{PROG}: skipped {line}", file=sys.stderr)
    for line in rep.errors:
        print(f"{PROG}: {line}", file=sys.stderr)
    print_failures(PROG, summary)
    if not quiet:
        extra = f", kept {kept} complete" if kept else ""
        print(f"wrote {len(rep.written)} figure(s) to {display_path(args.output)}{extra}")
    codes = [rep.exit_code, summary.exit_code]
    return 2 if 2 in codes else max(codes)


PLOTS = (
    "saxs2d",
    "saxs1d",
    "stability",
    "intensity",
    "g2",
    "diffusion",
    "twotime",
    "ages",
    "qmap",
    "g2map",
    "g2stability",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer export`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import add_batch

    add_batch(p, skip_existing=True)
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--plot", choices=PLOTS, required=True, action="append")
    p.add_argument("--format", choices=("png", "svg", "pdf"), default="png")
    p.add_argument("--size", choices=("single", "double", "slide"), default="double",
                   help="page: journal single column (3.4 in wide, 8 pt text), double "
                        "column (7 in, 9 pt; default) or slide (10 x 5.6 in, 14 pt); g2 "
                        "panels beyond a page go on more pages (PDF) or files _p1, _p2 ...")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing figures of the same names in DIR (pages "
                        "of an earlier export the new figure does not have are removed)")
