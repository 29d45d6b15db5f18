"""Pure array code (q-maps, partitions, reductions, correlators) written against the backend."""
