"""g2 by sample age: the multi-tau two-time (age x lag) correlator and its pixel groups,
the cuts of a map at constant age and constant t1, and their analysis."""
