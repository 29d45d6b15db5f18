"""The multi-tau correlators: dense frames (compiled CPU kernels, array kernels, one
XLA program), photons, a growing stream, and the per-pixel G2 stack."""
