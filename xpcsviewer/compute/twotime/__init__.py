"""The two-time correlators: full C(t1, t2) maps of dense frames and of photons, and the
maps of pixel groups."""
