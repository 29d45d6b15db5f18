"""A batch job on a machine without an accelerator never imports JAX."""

from __future__ import annotations

import subprocess
import sys

from xpcsviewer.backends import accelerator_possible


def test_pinned_cpu_means_no_accelerator():
    assert not accelerator_possible({"XPCS_DEVICE": "cpu"})
    assert not accelerator_possible({"XPCS_USE_JAX": "false"})
    assert not accelerator_possible({"JAX_PLATFORMS": "cpu"})


def test_job_backend_without_accelerator_does_not_load_jax():
    code = (
        "import sys, os\n"
        "os.environ['JAX_PLATFORMS'] = 'cpu'\n"
        "os.environ.pop('XPCS_USE_JAX', None)\n"
        "from xpcsviewer.backends import get_job_backend\n"
        "print(get_job_backend().name, 'jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numpy", "False"]
