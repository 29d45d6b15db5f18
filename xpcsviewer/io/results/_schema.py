"""Schema paths of the result-file layouts (result-file-format.md §3) and layout detection."""

from __future__ import annotations

import h5py

from xpcsviewer.io._h5 import _exists
from xpcsviewer.io.errors import XpcsFileError

RESULT_SUFFIXES = (".hdf", ".h5", ".hdf5", ".nxs")

# NeXus paths (result-file-format.md §3)
QMAP = "/xpcs/qmap"
MT = "/xpcs/multitau"
TT = "/xpcs/twotime"
C2_GROUP = "/xpcs/twotime/correlation_map"
FRAME_TIME = "/entry/instrument/detector_1/frame_time"
COUNT_TIME = "/entry/instrument/detector_1/count_time"
ENERGY = "/entry/instrument/incident_beam/incident_energy"
ENTRY_DIST = "/entry/instrument/detector_1/distance"
G2_STACK_NAMES = ("unnormalized_G2", "unnormalized_g2")
# Metadata arrays larger than this are summarised instead of copied.
_META_MAX_ELEMENTS = 64


def _layout(f: h5py.File) -> str:
    if _exists(f, QMAP):
        return "nexus"
    if _exists(f, "/exchange") and _exists(f, "/xpcs/dqmap"):
        return "legacy"
    if _exists(f, "/G2IPIF"):
        raise XpcsFileError(
            f.filename,
            "is a per-pixel G2 side file (/G2IPIF), not a result file",
            expected="the result file that links to it (…_results.hdf)",
        )
    if _exists(f, "/qmap"):
        raise XpcsFileError(
            f.filename,
            "is a partition (/qmap) file, not a result file",
            expected="an XPCS result file with /xpcs/qmap and results",
        )
    err = XpcsFileError(
        f.filename,
        "unknown layout: neither /xpcs/qmap (NeXus) nor /exchange + /xpcs/dqmap (legacy)",
        expected="an XPCS result file",
    )
    err.incomplete = True
    raise err


def _analysis_type(f: h5py.File, layout: str) -> tuple[str, ...]:
    out = []
    if layout == "nexus":
        if _exists(f, C2_GROUP):
            out.append("Twotime")
        if _exists(f, MT + "/normalized_g2"):
            out.append("Multitau")
    else:
        if _exists(f, "/exchange/C2T_all"):
            out.append("Twotime")
        if _exists(f, "/exchange/norm-0-g2"):
            out.append("Multitau")
    if not out:
        err = XpcsFileError(
            f.filename,
            "no analysis results",
            dataset=f"{C2_GROUP} or {MT}/normalized_g2"
            if layout == "nexus"
            else "/exchange/norm-0-g2",
            expected="a multi-tau or two-time result",
        )
        err.incomplete = True
        raise err
    return tuple(out)
