"""Inputs of the multi-file commands: per-pixel G2 side files are skipped with a note."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path


def skip_side_files(files: Sequence[str | os.PathLike], prog: str) -> list:
    """``files`` without per-pixel G2 side files (``X_results_G2.hdf``), one note each.

    A side file belongs to its result file (``demo_data/*`` or ``correlate
    --save-g2-pixel`` put both in one folder): it is skipped as ``info`` and
    ``snapshot`` do, not failed. Only names ending in ``_G2`` are opened to tell,
    so a batch of result files pays nothing. Returns ``[]`` (after saying so)
    when only side files were given.
    """
    from xpcsviewer.io.errors import display_path, one_line
    from xpcsviewer.io.results.g2stack import describe_g2_side_file

    kept = []
    for f in files:
        if Path(os.fsdecode(f)).stem.endswith("_G2"):
            side = describe_g2_side_file(f)
            if side is not None:
                of = side["result_file"]
                print(one_line(f"{prog}: note: skipping {display_path(f)}: a per-pixel G2 "
                               f"side file{' of ' + display_path(of) if of else ''}, "
                               "not a result file"), file=sys.stderr)
                continue
        kept.append(f)
    if files and not kept:
        print(one_line(f"{prog}: {display_path(files[0])}: no result file among the "
                       "inputs (only per-pixel G2 side files)"), file=sys.stderr)
    return kept
