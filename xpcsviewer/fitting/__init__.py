"""g2 models, batched least squares, Bayesian NUTS and diffusion fits.

Importing this package does not import JAX or NumPyro; :mod:`xpcsviewer.fitting.bayes`
(``fit_g2_bayes``) imports them when first used.
"""

from __future__ import annotations

from typing import Any

# bound here too when the command line loaded it before this package (cli._model_choices)
from xpcsviewer.fitting import vocabulary as vocabulary
from xpcsviewer.fitting.diffusion import (
    DiffusionResult,
    DiffusionVerdict,
    diffusion_from_fit,
    diffusion_verdict,
    fit_diffusion,
    hydrodynamic_radius,
    solvent_from_sample,
    water_viscosity,
)
from xpcsviewer.fitting.diffusion_joint import JointDiffusionResult, fit_diffusion_joint
from xpcsviewer.fitting.lsq import ERROR_SCALING, G2FitResult, fit_g2, usable_errors
from xpcsviewer.fitting.models import (
    MODEL_PARAMS,
    G2Model,
    ParamSpec,
    averaging_factors,
    default_params,
    evaluate_model,
    model_param_names,
)
from xpcsviewer.fitting.results import (
    fit_record,
    fit_results_to_csv,
    fit_results_to_json,
    save_fit_hdf5,
    write_fit_csv,
    write_fit_json,
)
from xpcsviewer.fitting.status import FitStatus

__all__ = [
    "ERROR_SCALING",
    "MODEL_PARAMS",
    "BayesFitResult",
    "DiffusionBayesResult",
    "DiffusionResult",
    "DiffusionVerdict",
    "FitStatus",
    "G2FitResult",
    "G2Model",
    "JointDiffusionResult",
    "ParamSpec",
    "averaging_factors",
    "default_params",
    "diffusion_from_fit",
    "diffusion_verdict",
    "evaluate_model",
    "fit_diffusion",
    "fit_diffusion_joint",
    "fit_diffusion_joint_bayes",
    "fit_g2",
    "fit_g2_bayes",
    "fit_record",
    "fit_results_to_csv",
    "fit_results_to_json",
    "hydrodynamic_radius",
    "model_param_names",
    "save_fit_hdf5",
    "solvent_from_sample",
    "usable_errors",
    "water_viscosity",
    "write_fit_csv",
    "write_fit_json",
]

_LAZY = {"fit_g2_bayes", "BayesFitResult", "fit_diffusion_joint_bayes", "DiffusionBayesResult"}


def __getattr__(name: str) -> Any:
    # NumPyro/JAX load only when the Bayesian API is first touched.
    if name in _LAZY:
        from xpcsviewer.fitting import bayes

        return getattr(bayes, name)
    raise AttributeError(f"module 'xpcsviewer.fitting' has no attribute {name!r}")
