"""Issue 50, item 6: `regroup` (and the audit) refuse per-pixel stacks they cannot use,
naming the file and the dataset, instead of turning them into plausible g2."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main


def _copy(tiny_demo_dir, tmp_path):
    for p in tiny_demo_dir.glob("T03_tiny_g2_results*.hdf"):
        shutil.copy(p, tmp_path / p.name)
    return tmp_path / "T03_tiny_g2_results.hdf", tmp_path / "T03_tiny_g2_results_G2.hdf"


def _stack_name(side):
    with h5py.File(side, "r") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset)
                     and o.ndim == 4 else None)
    return names[0]


def _edit(side, change):
    name = _stack_name(side)
    with h5py.File(side, "r+") as f:
        a = f[name][()]
        new = change(a)
        del f[name]
        f.create_dataset(name, data=new)


CASES = {
    "all NaN": (lambda a: np.full_like(a, np.nan), "G2 is nan"),
    "IP and IF zero": (lambda a: np.concatenate([a[:, :1], 0 * a[:, 1:]], axis=1),
                       "IP is zero at every correlated pixel"),
    "negative IF": (lambda a: np.concatenate([a[:, :2], -1 - a[:, 2:]], axis=1),
                    "IF is negative"),
    "wrong size": (lambda a: a[:, :, :-2, :-3], "per-pixel plane of shape"),
    "integers": (lambda a: (a * 1000).astype(np.int32), "holds int32 values"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_unusable_stack_is_refused(tiny_demo_dir, tmp_path, capsys, case):
    res, side = _copy(tiny_demo_dir, tmp_path)
    change, text = CASES[case]
    _edit(side, change)
    code = main(["regroup", str(res), "-o", str(tmp_path / "out.hdf")])
    err = capsys.readouterr().err
    assert code == 3, err
    assert text in err and "T03_tiny_g2_results" in err
    assert "unnormalized_G2" in err or "/G2IPIF" in err  # the dataset (of the side file)
    assert "Traceback" not in err and not (tmp_path / "out.hdf").exists()
    # the audit reads the stack with the same checks
    assert main(["audit", str(res), "-o", str(tmp_path / "a.csv")]) == 3
    assert text in capsys.readouterr().err


def test_a_good_stack_still_regroups(tiny_demo_dir, tmp_path):
    res, _ = _copy(tiny_demo_dir, tmp_path)
    assert main(["regroup", str(res), "-o", str(tmp_path / "out.hdf"), "--quiet"]) == 0
