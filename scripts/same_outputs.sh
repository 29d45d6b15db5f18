#!/bin/bash
# Run the user-visible outputs of a checkout on the demo set: `fit` JSON and CSV, `export`
# figures (SVG) and `correlate` of a small raw file, for scripts/compare_outputs.py.
#   scripts/same_outputs.sh CHECKOUT OUT DEMO_DIR RAW QMAP
# CHECKOUT's own package is used (the command runs from there); PYTHON defaults to .venv.
# The demo's photon-sparse raw files (DEMO_DIR/raw) are correlated too, on every path and
# with the options that change what a job does (two-time, ages, groups, selections, batch).
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
C="$PY -m xpcsviewer correlate"
$C "$RAW" --qmap "$QMAP" -o "$OUT/corr.hdf" --mode both --quiet
$C "$RAW" --qmap "$QMAP" -o "$OUT/corr_sel.hdf" --mode both --begin-frame 3 --stride-frame 2 \
  --avg-frame 2 --normalize-frame --num-partial-g2 3 --dq 1-2 --quiet
$C "$RAW" --qmap "$QMAP" -o "$OUT/corr_groups.hdf" --mode twotime --twotime-groups 4 \
  --twotime-ages --dq 1 --quiet
$C "$RAW" --qmap "$QMAP" -o "$OUT/corr_pixel.hdf" --save-g2-pixel --quiet
R=$D/raw
$C "$R"/S01_*.bin --qmap "$R"/S01_*qmap.h5 -o "$OUT/s01.hdf" --mode both --dq 1-2 --quiet
$C "$R"/S01_*.bin --qmap "$R"/S01_*qmap.h5 -o "$OUT/s01_dense.hdf" --path dense --quiet
$C "$R"/S01_*.bin --qmap "$R"/S01_*qmap.h5 -o "$OUT/s01_ages.hdf" --twotime-ages \
  --twotime-groups 4 --dq 1 --end-frame 2000 --save-g2-pixel --quiet
$C "$R"/S02_*.bin.000 --qmap "$R"/S02_*qmap.h5 -o "$OUT/s02.hdf" --quiet
$C "$R"/S03_*_00000.h5 --qmap "$R"/S03_*qmap.h5 -o "$OUT/s03.hdf" --stride-frame 2 --quiet
$C "$R"/S04_*_sparse.h5 --qmap "$R"/S04_*qmap.h5 -o "$OUT/s04.hdf" --quiet
$C "$R"/S05_*_events.h5 --qmap "$R"/S05_*qmap.h5 -o "$OUT/s05.hdf" --quiet
$C "$R"/S05_*_events.h5 --qmap "$R"/S05_*qmap.h5 -o "$OUT/s05_bin.hdf" --bin-time 1e-6 \
  --mode both --dq 1 --quiet
$C "$R"/S01_*.bin "$R"/S01_*.bin --qmap "$R"/S01_*qmap.h5 -o "$OUT/batch_dup" --quiet \
  2> "$OUT/batch_dup.err" || echo "exit $?" >> "$OUT/batch_dup.err"
sed -i "s#$OUT#OUT#g" "$OUT/batch_dup.err"
mkdir -p "$OUT/batch"
$C "$R"/S04_*_sparse.h5 "$R"/S01_*.bin --qmap "$R"/S01_*qmap.h5 -o "$OUT/batch" --quiet \
  2> "$OUT/batch.err" || echo "exit $?" >> "$OUT/batch.err"
sed -i "s#$OUT#OUT#g" "$OUT/batch.err"
# the refusals and their exit codes are outputs too
k=0
for a in "--frame-time -1" "--bin-time 0" "--num-partial-g2 -1" "--dq 99 --mode twotime" \
    "--path sparse --mode twotime --dq 1" "--twotime-groups -1" "--twotime-groups 2 --mode multitau" \
    "--end-frame 1" "--path dense" "--twotime-ages" "--mode both --save-g2-pixel --engine xla"; do
  k=$((k + 1))
  # shellcheck disable=SC2086
  $C "$R"/S05_*_events.h5 --qmap "$R"/S05_*qmap.h5 -o "$OUT/bad$k.hdf" $a --quiet \
    >> "$OUT/refusals.txt" 2>&1 || echo "[$a] exit $?" >> "$OUT/refusals.txt"
done
sed -i "s#$OUT#OUT#g" "$OUT/refusals.txt"
