"""Unit strings read back as written: UTF-8, Latin-1 bytes and once-mangled UTF-8."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from xpcsviewer.io._h5 import _decode


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("Å^2/s", "Å^2/s"),
        ("Å^2/s".encode(), "Å^2/s"),
        ("Å^2/s".encode("latin-1"), "Å^2/s"),
        ("Å^2/s".encode().decode("cp1252"), "Å^2/s"),  # "Ã…^2/s"
        ("Å^2/s".encode().decode("latin-1"), "Å^2/s"),
        ("Ã alone", "Ã alone"),  # not mangled UTF-8: left as it is
        ("1/Å", "1/Å"),
    ],
)
def test_decode_text(stored, expected):
    assert _decode(stored) == expected


def test_units_attribute_in_file(tmp_path):
    from xpcsviewer.io.results._analysis import _sample

    p = tmp_path / "u.h5"
    with h5py.File(p, "w") as f:
        g = f.create_group("entry/sample")
        g["D"] = 1.0
        g["D"].attrs["units"] = "Å^2/s"
        g["v"] = 2.0
        g["v"].attrs["units"] = np.bytes_("Å/s".encode())
        g["w"] = 3.0
        g["w"].attrs["units"] = "Å/s".encode().decode("cp1252")
    with h5py.File(p, "r") as f:
        _, units = _sample(f)
    assert units == {"D": "Å^2/s", "v": "Å/s", "w": "Å/s"}
