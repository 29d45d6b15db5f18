"""``xpcsviewer export``: render the GUI's export figures for many files, off-screen.

Plots that overlay files (``saxs1d``, ``intensity``, ``g2``, ``diffusion``) give
one combined figure ``combined_<kind>.<fmt>``; the others (``saxs2d``,
``stability``, ``twotime``, ``qmap``, ``g2map``, ``g2stability``) one figure per
file, ``<label>_<kind>.<fmt>``, with the figure's defaults (e.g. the first
q-bin). For ``g2`` and ``diffusion`` the curves are first fitted with the
single-exponential model (the same batched least-squares fit as the g2 tab), so
the figures show the fits and the diffusion coefficient.

Unreadable files are reported (one line each) and the rest are still exported;
the exit code is then 3. A file whose data cannot give a plot (all-NaN or zero
g2, no error bars, nothing to fit) is left out of that plot with a note naming
the file and the plot, the rest is exported, and the exit code is 3. A file
that lacks the data of a plot (two-time of a multitau-only file, partial g2
snapshots for ``g2stability``) is skipped with a note and does not change the
exit code. Existing figures are refused (exit 2) unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import OutputRefusedError, check_output, display_path
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
    if kind in ("g2", "diffusion", "g2map") and res.multitau is None:
        return "no multitau g2"
    if kind == "g2stability" and (
        res.multitau is None or res.multitau.g2_partial is None
    ):
        return "no partial g2 snapshots"
    if kind == "twotime" and res.twotime is None:
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
    progress, cancel
        One step per figure (plus one per file read); cancel checked between them.

    Returns
    -------
    ExportReport
        A file whose data cannot give a plot (all-NaN g2, no valid fits) is
        left out of that plot with a note in ``undrawable``; everything else
        is still exported.
    """
    from xpcsviewer.export import make_figure, save_figure
    from xpcsviewer.export.g2_data import fit_g2_blocks, g2_blocks
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

    def save(fig: Any, name: str) -> None:
        try:
            target = check_output(out / f"{name}.{fmt}", files, overwrite)
            rep.written.append(save_figure(fig, target))
        except OutputRefusedError as exc:
            rep.refused.append(str(exc))
        finally:
            fig.clear()

    fits: dict[tuple[int, ...], Any] = {}

    def draw(kind: str, usable: list[Any], name: str) -> None:
        opts: dict[str, Any] = {}
        if kind in ("g2", "diffusion"):
            key = tuple(id(r) for r in usable)
            if key not in fits:  # g2 and diffusion of the same files share one fit
                fits[key] = fit_g2_blocks(
                    g2_blocks(usable), model="single", cancel=cancel
                )
            opts["fits"] = fits[key]
        save(make_figure(kind, usable, **opts), name)

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
        except (Cancelled, KeyboardInterrupt, MemoryError):
            raise
        except Exception:  # noqa: BLE001 - find the files that cannot be drawn
            pass
        keep = []
        for r in usable:
            try:
                _probe(kind, r, cancel)
                keep.append(r)
            except (Cancelled, KeyboardInterrupt, MemoryError):
                raise
            except Exception as exc:  # noqa: BLE001 - degenerate data of one file
                rep.undrawable.append(
                    f"{kind}: {display_path(r.path)}: cannot be drawn ({_why(exc)})"
                )
        if keep:
            try:
                draw(kind, keep, f"combined_{kind}")
            except (Cancelled, KeyboardInterrupt, MemoryError):
                raise
            except Exception as exc:  # noqa: BLE001 - only the combination fails
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
                save(make_figure(kind, [res]), f"{lab}_{kind}")
            except XpcsFileError as exc:
                rep.errors.append(exc.one_line())
            except (Cancelled, KeyboardInterrupt, MemoryError):
                raise
            except Exception as exc:  # noqa: BLE001 - degenerate data of this file
                rep.undrawable.append(
                    f"{kind}: {display_path(res.path)}: cannot be drawn ({_why(exc)})"
                )
    report(progress, cancel, total, total, "done")
    return rep


def _probe(kind: str, res: Any, cancel: CancelToken | None) -> None:
    """Build (not save) ``kind`` for one file; raises what drawing it would raise."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from xpcsviewer.export import make_figure
    from xpcsviewer.export.g2_data import fit_g2_blocks, g2_blocks

    opts: dict[str, Any] = {}
    if kind in ("g2", "diffusion"):
        opts["fits"] = fit_g2_blocks(g2_blocks([res]), model="single", cancel=cancel)
    fig = make_figure(kind, [res], **opts)
    try:
        FigureCanvasAgg(fig).draw()  # some errors only show when drawn
    finally:
        fig.clear()


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer export``; returns the exit code."""
    quiet = bool(getattr(args, "quiet", False))
    with TextProgressBar("export", enabled=not quiet) as bar:
        rep = export_figures(
            args.files,
            args.plot,
            args.output,
            args.format,
            overwrite=bool(getattr(args, "overwrite", False)),
            progress=bar,
        )
    for line in rep.errors:
        print(f"{PROG}: {line}", file=sys.stderr)
    for line in rep.refused:
        print(f"{PROG}: {line}", file=sys.stderr)
    for line in rep.undrawable:
        print(f"{PROG}: skipped {line}", file=sys.stderr)
    for line in rep.skipped:
        print(f"{PROG}: skipped {line}", file=sys.stderr)
    if not quiet:
        print(f"wrote {len(rep.written)} figure(s) to {display_path(args.output)}")
    return rep.exit_code
