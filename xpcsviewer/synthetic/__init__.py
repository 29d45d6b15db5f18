"""Physically based simulated XPCS data (speckle frames with known dynamics) and the demo set."""

from xpcsviewer.synthetic.analytic import (
    c2_model,
    decay_rate,
    g2_model,
    sphere_form_factor,
    stokes_einstein,
    water_viscosity,
)
from xpcsviewer.synthetic.demo import DEMO_SPECS, write_demo
from xpcsviewer.synthetic.results import build_result, multitau_delays
from xpcsviewer.synthetic.speckle import Geometry, iter_frames, simulate_frames

__all__ = [
    "DEMO_SPECS",
    "Geometry",
    "build_result",
    "c2_model",
    "decay_rate",
    "g2_model",
    "iter_frames",
    "multitau_delays",
    "simulate_frames",
    "sphere_form_factor",
    "stokes_einstein",
    "water_viscosity",
    "write_demo",
]
