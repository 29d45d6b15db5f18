"""Fixtures for the export tests: small result files with known physics."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def load_fake_results():
    """The ``fake_results`` helper module (importlib mode has no package imports)."""
    spec = importlib.util.spec_from_file_location(
        "xpcs_test_fake_results", _HERE / "fake_results.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def fake():
    """The fake_results module."""
    return load_fake_results()


@pytest.fixture(scope="session")
def fake_results(tmp_path_factory, fake):
    """Three files: two multitau+twotime ("both") and one multitau-only, on disk."""
    d = tmp_path_factory.mktemp("fake_results")
    return [
        fake.make_result(d / "A001_results.hdf", seed=1, kind="both"),
        fake.make_result(d / "A002_results.hdf", seed=2, kind="multitau", beta=0.2),
        fake.make_result(d / "A003_results.hdf", seed=3, kind="twotime"),
    ]
