"""Result files: what the correlators write and the viewer reads (docs/decisions.md, ADR-8).

- :mod:`~xpcsviewer.model.result`: the in-memory result (``XpcsResult``, ``QMap``, ...);
- :mod:`~xpcsviewer.io.results.reader` (over ``_analysis``, ``_bigdata``, ``_qmap_read``)
  and :mod:`~xpcsviewer.io.results.writer`; the names of the file's datasets: ``_schema``;
- one module per optional part of a result: ``g2stack`` (the per-pixel G2 side file),
  ``age_lag`` and ``age_lag_groups`` (age x lag maps), ``twotime_groups`` (pixel-group
  two-time maps), ``g2_quality`` (suspect g2 errors).

They stand on the shared HDF5 layer one floor down in :mod:`xpcsviewer.io` (``_h5``,
``_h5open``, ``_h5links``, ``_links``, ``outputs``, ``errors``), which
:mod:`xpcsviewer.io.raw` uses too. The public names are :mod:`xpcsviewer.io`'s.
"""
