"""Issue 33 (8): a checkout not beside ../shared points the real-data tests at the data."""

import importlib.util
from pathlib import Path


def _conftest(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("XPCS_REAL_DATA", raising=False)
    else:
        monkeypatch.setenv("XPCS_REAL_DATA", value)
    path = Path(__file__).with_name("conftest.py")
    spec = importlib.util.spec_from_file_location("_conftest_env_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_xpcs_real_data_points_the_real_data_tests(monkeypatch, tmp_path):
    assert _conftest(monkeypatch, str(tmp_path)).SHARED_REAL == tmp_path
    default = _conftest(monkeypatch, None).SHARED_REAL
    assert default == Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"
