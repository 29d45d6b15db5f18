"""``xpcsviewer device`` and the CLI skeleton's contract."""

from __future__ import annotations

import json

import pytest

from xpcsviewer.cli import EXIT_USAGE, SUBCOMMANDS, build_parser, main


def test_device_json(capsys, fresh_device_manager):
    assert main(["device", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["backend"] == "jax"
    assert info["x64"] is True
    # cpu:0 computes; the other XLA host devices are there for parallel NUTS chains
    assert info["devices"][0] == "cpu:0"
    assert all(d.startswith("cpu:") for d in info["devices"])
    assert info["chosen_device"] == "cpu"
    for key in ("jax_version", "chosen_device", "routing_threshold", "cache_dir"):
        assert key in info


def test_device_human(capsys, fresh_device_manager):
    assert main(["device"]) == 0
    out = capsys.readouterr().out
    assert "routing threshold" in out and "float64" in out


def test_backend_flag_numpy(capsys, fresh_device_manager, monkeypatch):
    monkeypatch.delenv("XPCS_USE_JAX", raising=False)
    assert main(["--backend", "numpy", "device", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "numpy"


def test_every_subcommand_registered():
    parser = build_parser()
    text = parser.format_help()
    for name in SUBCOMMANDS:
        assert name in text


def test_bad_device_flag_is_usage_error(capsys, fresh_device_manager):
    assert main(["--device", "npu", "device"]) == EXIT_USAGE
    assert "npu" in capsys.readouterr().err


def test_unknown_option_exits_2():
    with pytest.raises(SystemExit) as exc:
        main(["info", "--no-such-option"])
    assert exc.value.code == 2
