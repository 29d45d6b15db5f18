"""The correlate batch's side of the job: one task per raw file (in-process or on Dask),
its output names and the check that an output is a complete result (``--skip-existing``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from xpcsviewer.compute.spec import CorrelateSpec, PlanRequest, SpecError
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import OutputRefusedError

__all__ = ["correlate_task", "output_complete", "output_name"]


def output_name(raw: str | Path) -> str:
    """``RAWNAME_results.hdf``: the output of one RAW in a batch's folder."""
    name = Path(raw).name
    if re.search(r"\.00[0-5]$", name):  # a Rigaku 3M module file stands for the set
        name = name[:-4]
    for suffix in (".h5", ".hdf5", ".hdf", ".nxs", ".npy", ".bin"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{name}_results.hdf"


def output_complete(output: str | Path, mode: str, side: Path | None = None,
                    ages: bool = False) -> bool:
    """True when ``output`` is a readable result with what ``mode`` writes (and, with
    ``ages``, an age x lag map).

    Outputs are written atomically, so one at its final name is complete unless
    something else wrote it; this checks that it reads as a result of the mode.
    """
    from xpcsviewer.io.results.reader import read_result

    if not Path(output).is_file() or (side is not None and not side.is_file()):
        return False
    try:
        res = read_result(output)
    except (XpcsFileError, OSError):
        return False
    if mode in ("multitau", "both") and res.multitau is None:
        return False
    if ages:
        from xpcsviewer.io._h5 import open_h5
        from xpcsviewer.io.results.age_lag import has_age_lag

        try:
            with open_h5(output) as f:
                if not has_age_lag(f):
                    return False
        except (XpcsFileError, OSError):
            return False
    return not (mode in ("twotime", "both") and res.twotime is None)


def correlate_task(options: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """One RAW of a batch (any worker): ``{"output", "bytes", "notes", "skipped"}``.

    ``options``: ``{"qmap", "spec": CorrelateSpec.as_dict(), "request": {...},
    "overwrite", "skip_existing", "mask"}`` (plain values: a Dask task is pickled).

    Raises
    ------
    XpcsFileError
        Bad raw frames; SpecError for options this file cannot take.
    """
    from xpcsviewer.jobs import correlate as _job  # the module: a test may patch it

    spec = CorrelateSpec.from_dict(options["spec"])
    job = _job.CorrelateJob(Path(item["path"]), Path(options["qmap"]), Path(item["output"]),
                       spec, PlanRequest(**options.get("request", {})),
                       bool(options.get("overwrite")), output_checked=True,
                       mask=options.get("mask"))
    out = item["output"]
    if options.get("skip_existing") and Path(out).exists():
        if output_complete(out, spec.mode, job.side, spec.ages):
            return {"output": out, "bytes": os.path.getsize(out), "notes": [],
                    "skipped": True}
        if not options.get("overwrite"):
            raise OutputRefusedError(
                f"{item['shown_output']}: exists but is not a complete result of this "
                "mode; refusing to replace it (use --overwrite)")
    try:
        done = _job.correlate_file(job)
    except SpecError as exc:  # this file cannot take the options: a usage error
        from xpcsviewer.batch import UsageError

        raise UsageError(str(exc)) from None
    return {"output": out, "bytes": os.path.getsize(out),
            "notes": [f"xpcsviewer correlate: note: {n}" for n in done.notes],
            "skipped": False}
