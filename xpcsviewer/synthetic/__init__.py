"""Physically based simulated XPCS data (speckle frames with known dynamics) and the demo set."""
