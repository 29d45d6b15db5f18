"""Detector and pixel tools: partitions and q-maps, masks, ROIs, SAXS reductions, the
pixel audit and regrouping of per-pixel stacks."""
