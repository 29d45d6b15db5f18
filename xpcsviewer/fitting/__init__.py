"""g2 models, batched least squares, Bayesian NUTS and diffusion fits."""
