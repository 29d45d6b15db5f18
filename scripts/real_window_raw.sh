#!/usr/bin/env bash
# Issue 45 walked in a real X window (Xvfb + xdotool), as a user would, with screenshots:
# open the demo's R01 raw file, let the Raw tab find its faults, select the hot pixels and
# "Mask these", select the empty frames and "Exclude frames", press Correlate..., run the
# dialog, and look at the result on the g2 tab. Checks the result file at the end.
#
#   scripts/real_window_raw.sh [OUT]      # screenshots OUT/01_*.png .. (default /tmp/xpcs_real_window)
#
# Exit 0: walked and checked; 1: a step failed; 2: this machine cannot show the window
# (a tool or Qt's X11 libraries missing).
#
# Needs Xvfb, xdotool, ImageMagick's import and Qt's X11 libraries (Debian: xvfb xdotool
# imagemagick libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0
# libxkbcommon-x11-0 libxcb-cursor0). The clicks are at the positions of the widgets in a
# 1400 x 900 window with the default layout (a fresh config folder): a layout change moves
# them, and the checks at the end then fail.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/xpcs_real_window}
BIN=${BIN:-.venv/bin}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for tool in Xvfb xdotool import; do
    command -v "$tool" >/dev/null || { echo "real_window_raw: $tool is not installed" >&2; exit 2; }
done

DATA="$OUT/demo"
[ -f "$DATA/raw/R01_dense_faults.h5" ] || "$BIN/xpcsviewer" demo --no-gui --quiet --out "$DATA"
rm -f "$DATA"/raw/R01_dense_faults_results*.hdf "$DATA"/raw/R01_dense_faults_results*_mask.hdf

DISP=:$((90 + RANDOM % 9))
Xvfb "$DISP" -screen 0 1400x900x24 >"$OUT/xvfb.log" 2>&1 &
XVFB=$!
export DISPLAY=$DISP
APP=
cleanup() { [ -n "$APP" ] && kill "$APP" 2>/dev/null; kill "$XVFB" 2>/dev/null; true; }
trap cleanup EXIT
sleep 1
rm -rf "$OUT/config"
XPCSVIEWER_CONFIG_DIR="$OUT/config" JAX_PLATFORMS=cpu \
    "$BIN/xpcsviewer" "$DATA/raw/R01_dense_faults.h5" >"$OUT/app.log" 2>&1 &
APP=$!
WIN=
for _ in $(seq 120); do  # the window, or the app's exit (Qt's X11 libraries missing: 2)
    WIN=$(xdotool search --onlyvisible --name "XPCS Viewer" 2>/dev/null | head -1) || true
    [ -n "$WIN" ] && break
    if ! kill -0 "$APP" 2>/dev/null; then
        echo "real_window_raw: the app did not start:" >&2; cat "$OUT/app.log" >&2; exit 2
    fi
    sleep 1
done
[ -n "$WIN" ] || { echo "real_window_raw: no window after 120 s" >&2; exit 1; }
xdotool windowmove "$WIN" 0 0 windowsize "$WIN" 1400 900
shot() { sleep "${2:-1}"; import -window root "$OUT/$1.png"; echo "  $OUT/$1.png"; }
click() { xdotool mousemove "$1" "$2" click 1; }
# the mean brightness of a screen region (0 black .. 1 white)
region() { import -window root -crop "$1" png:- | convert - -colorspace gray -format "%[fx:mean]" info:; }
wait_for() {  # until the region holds text (is no longer blank), at most $2 s
    for _ in $(seq "$2"); do
        awk -v m="$(region "$1")" 'BEGIN { exit !(m < 0.97) }' && return 0
        sleep 1
    done
    echo "real_window_raw: nothing in $1 after $2 s" >&2; return 1
}

echo "screenshots:"
sleep 6  # the window laid out at its size, the table empty while the source is inspected
wait_for 100x8+345+725 120                     # the first row of the findings table
shot 01_raw_tab_inspected                     # the source read, its faults listed
click 408 729                                 # first finding: a hot pixel
for _ in 1 2 3 4 5 6; do xdotool key shift+Down; done   # ... the seven hot pixels
shot 02_hot_pixels_selected
click 752 684                                 # Mask these
click 408 787; xdotool type --delay 50 "empty"   # keyboard search in the kind column
shot 03_empty_frames_selected
click 852 684                                 # Exclude frames
click 1349 60                                 # Correlate...
shot 04_correlate_dialog 3
click 886 716                                 # Correlate (the dialog's run button)
RES="$DATA/raw/R01_dense_faults_results.hdf"
for _ in $(seq 120); do [ -f "$RES" ] && break; sleep 1; done
shot 05_correlated 3
click 971 730                                 # Close
shot 06_g2_tab 4

"$BIN/python" - "$RES" <<'EOF'
import sys

import h5py

with h5py.File(sys.argv[1], "r") as f:
    cfg = f["xpcs/multitau/config"]
    excluded = cfg["excluded_frames"][()].decode()
    removed = int(cfg["mask_removed_pixels"][()])
print(f"result: {sys.argv[1]}: frames excluded {excluded}, pixels masked {removed}")
assert excluded == "900-939", excluded
assert removed == 7, removed
EOF
echo "real_window_raw: ok"
