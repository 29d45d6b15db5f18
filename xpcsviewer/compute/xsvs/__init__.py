"""X-ray speckle visibility (XSVS, issue 46): photon-count histograms per q-bin and
exposure (:mod:`.histogram`); their fits live in :mod:`xpcsviewer.fitting.xsvs`."""
