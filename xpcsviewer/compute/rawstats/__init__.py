"""Statistics of raw detector data and the faults found in them (issue 45): one pass
over a run's hits or dense frames (:mod:`.accumulate`, its numba kernel in
:mod:`._numba`), then the finders on what it accumulated: hot and dead pixels, counts at
the cap, empty frames (:mod:`.faults`), cosmic-ray clusters (:mod:`.clusters`) and
periodic modulations (:mod:`.spectrum`). Pure array code: the job that reads a source
and feeds the pass is :mod:`xpcsviewer.jobs.inspect`."""
