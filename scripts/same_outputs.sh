#!/bin/bash
# Run the user-visible outputs of a checkout on the demo set: `fit` JSON and CSV, `export`
# figures (SVG) and `correlate` of a small raw file, for scripts/compare_outputs.py.
#   scripts/same_outputs.sh CHECKOUT OUT DEMO_DIR RAW QMAP
# CHECKOUT's own package is used (the command runs from there); PYTHON defaults to .venv.
set -euo pipefail
REPO=$1; OUT=$2; D=$3; RAW=$4; QMAP=$5
PY=${PYTHON:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
rm -rf "$OUT"; mkdir -p "$OUT"
cd "$REPO"
export JAX_PLATFORMS=cpu QT_QPA_PLATFORM=offscreen
"$PY" -m xpcsviewer fit "$D"/A0*.hdf "$D"/D01*.hdf "$D"/E01*.hdf --quiet -o "$OUT/fit.json"
"$PY" -m xpcsviewer fit "$D"/A0*.hdf --quiet -o "$OUT/fit.csv"
for k in g2 diffusion saxs1d twotime; do
  "$PY" -m xpcsviewer export --plot $k --format svg -o "$OUT/fig_$k" "$D"/A01*.hdf "$D"/A02*.hdf \
    "$D"/C01*.hdf --quiet || true
done
"$PY" -m xpcsviewer correlate "$RAW" --qmap "$QMAP" -o "$OUT/corr.hdf" --mode both --quiet
