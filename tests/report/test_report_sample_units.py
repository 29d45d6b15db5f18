"""Issue 49: the report's sample fields carry the units the file states."""

from __future__ import annotations

from xpcsviewer.report.content import sample_rows


def test_sample_numbers_with_their_units():
    sec = {"sample": {"D": 98100856.77002357, "model": "brownian", "speckle_modes": 5},
           "sample_units": {"D": "\u00c5^2/s"}}
    rows = dict(sample_rows(sec))
    assert rows["sample D"] == "9.81009e+07 \u00c5^2/s"
    assert rows["sample model"] == "brownian" and rows["sample speckle_modes"] == "5"
    assert sample_rows({}) == []
