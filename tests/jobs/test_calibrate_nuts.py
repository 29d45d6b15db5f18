"""`xpcsviewer device --calibrate` measured NUTS with a (B, T) delay array the sampler
refused (found on the H200 in issue 32's device session): the NUTS kind runs."""

import numpy as np


def test_calibrate_nuts_kind_runs_on_the_cpu():
    from xpcsviewer.jobs.calibrate import _nuts

    cost = _nuts("cpu")
    assert np.isfinite(cost["per_unit_s"]) and cost["per_unit_s"] > 0
    assert np.isfinite(cost["compile_s"]) and cost["compile_s"] >= 0
    # the sequential part a GPU pays per draw whatever the bins
    assert np.isfinite(cost["per_step_s"]) and cost["per_step_s"] >= 0
