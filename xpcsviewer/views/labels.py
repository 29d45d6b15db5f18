"""Short, distinct legend labels for file names (no Qt).

Result-file names are long and alike ("Average_B0147_S3_7_300C10p_att00_Rq0_00001_00200");
a legend cut from the left shows none of what tells them apart. Labels are built from
the names' ``_``-separated segments: by default the segments every name has are
dropped (and a long rest keeps its first and last two); a *style* picks segments by
position instead,
like the official viewer's ``--label-style`` (``"2,-1"``: the second and the last).
"""

from __future__ import annotations

__all__ = ["average_output_name", "parse_label_style", "short_labels"]

#: Longer automatic labels are shortened in the middle.
MAX_AUTO = 28


def parse_label_style(style: str) -> list[int]:
    """``"2,-1"`` -> [2, -1] (1-based positions, negative from the end); ValueError if bad."""
    out = []
    for part in str(style).replace(" ", "").split(","):
        if not part:
            continue
        k = int(part)  # ValueError names the bad part
        if k == 0:
            raise ValueError("label segments count from 1 (or -1 from the end), not 0")
        out.append(k)
    return out


def _pick(segs: list[str], picks: list[int]) -> str:
    chosen = [segs[k - 1] if k > 0 else segs[k] for k in picks if -len(segs) <= k <= len(segs)
              and k != 0]
    return "_".join(chosen)


def _elide(text: str, n: int = MAX_AUTO) -> str:
    if len(text) <= n:
        return text
    half = (n - 1) // 2
    return text[:half] + "\u2026" + text[-(n - 1 - half):]


def short_labels(names: list[str], style: str = "") -> list[str]:
    """Distinct short labels for ``names`` (file labels without ``_results.hdf``).

    Parameters
    ----------
    style : str
        "" (automatic) or segment positions ("2,-1"). A style that makes two labels
        equal falls back to the full names for those.
    """
    names = [str(n) for n in names]
    if not names:
        return []
    split = [n.split("_") for n in names]
    if style.strip():
        picks = parse_label_style(style)
        out = [_pick(s, picks) or n for s, n in zip(split, names, strict=True)]
    elif len(names) == 1:
        out = [_elide(names[0])]
    else:
        # drop the segments every name has; if still long: first segment + last two
        common = set(split[0]).intersection(*map(set, split[1:]))
        out = []
        for s in split:
            keep = [t for t in s if t not in common] or s
            if len("_".join(keep)) > MAX_AUTO and len(keep) > 3:
                keep = [keep[0], *keep[-2:]]
            out.append(_elide("_".join(keep)))
    # never two equal labels for different files
    seen: dict[str, int] = {}
    for lab in out:
        seen[lab] = seen.get(lab, 0) + 1
    return [lab if seen[lab] == 1 or n == lab else n for lab, n in zip(out, names, strict=True)]


def average_output_name(names: list[str]) -> str:
    """File name for the average of ``names``: what they share, then the first and last
    of what tells them apart ("F01_repeat_R250nm".."F04_repeat_R250nm" ->
    "Average_repeat_R250nm_F01-F04.hdf"), so the name says which files it holds."""
    import re

    names = [str(n) for n in names]
    if not names:
        return "Average.hdf"
    split = [n.split("_") for n in names]
    common = set(split[0]).intersection(*map(set, split[1:]))
    shared = [t for t in split[0] if t in common]
    if len(names) == 1:
        parts = [names[0]]
    else:
        distinct = ["_".join(t for t in s if t not in common) or n
                    for s, n in zip(split, names, strict=True)]
        parts = [*shared, f"{distinct[0]}-{distinct[-1]}"]
        if len(names) > 2:
            parts.append(f"{len(names)}files")
    stem = re.sub(r"[^A-Za-z0-9._+-]+", "_", "_".join(p for p in parts if p)).strip("_")
    return f"Average_{stem[:120]}.hdf"
