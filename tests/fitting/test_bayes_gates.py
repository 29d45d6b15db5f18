"""The window's process reads Bayesian results without importing JAX (issue 49, item 7).

A result sent from the fit process is unpickled in the window's process; importing
JAX/NumPyro there held the GIL for 0.3-0.5 s in a worker thread and paused the window.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from xpcsviewer.fitting import bayes_diagnostics, bayes_gates


def test_gates_are_the_diagnostics_gates():
    assert bayes_diagnostics.CONVERGENCE is bayes_gates.CONVERGENCE
    assert bayes_diagnostics.HDI_PROB == bayes_gates.HDI_PROB
    assert bayes_gates.ess_min(4) == 400.0 and bayes_gates.ess_min(0) == 100.0


def test_result_modules_import_no_jax():
    code = ("import sys, pickle\n"
            "import xpcsviewer.fitting.bayes_result, xpcsviewer.fitting.bayes_status\n"
            "import xpcsviewer.fitting.results\n"
            "bad = sorted(m for m in ('jax', 'jaxlib', 'numpyro') if m in sys.modules)\n"
            "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == ""


def test_unpickled_result_imports_no_jax(tmp_path):
    from xpcsviewer.fitting.bayes_result import BayesFitResult

    fields = BayesFitResult.__dataclass_fields__
    assert fields  # a dataclass: pickled by reference to its module
    code = ("import sys, pickle\n"
            f"r = pickle.load(open({str(tmp_path / 'r.pkl')!r}, 'rb'))\n"
            "print(type(r).__name__, 'jax' in sys.modules, 'numpyro' in sys.modules)\n")
    # the smallest result the class allows: every field left at a NumPy placeholder
    obj = object.__new__(BayesFitResult)
    obj.__dict__["draws"] = np.zeros(3)
    import pickle

    (tmp_path / "r.pkl").write_bytes(pickle.dumps(obj))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["BayesFitResult", "False", "False"]
