#!/usr/bin/env bash
# The second device session's measurements (issues 32, 33, 35), in one command of at
# most ~520 s, three parts side by side on disjoint cores of the 16-core host:
#   L  cores 0-1  issue 33: `live` latency (last frame -> fitted result on disk) on two
#                 cores with six busy processes on the same two cores (`taskset`: the
#                 2-core load the issue asks for, without other sessions' noise), the
#                 tree before this session (benchmarks/results/old_tree.tar.gz, carried)
#                 and now, alternating
#   M  cores 2-3  issue 35: the multi-tau two-time correlator, 10^5 frames of 128 x 128,
#                 2 threads (the goal: <= 1 GB, <= 120 s on 2 cores)
#   G  cores 4-15 issue 32's owed GPU checks (benchmarks/device_session.sh with a shorter
#                 budget: `device --calibrate`, LSQ transfers, device jobs), then the
#                 correlator at 10^6 frames on 12 threads
# Results: $OUT/summary.json plus the logs of each part (few files come back).
#   bash benchmarks/device_session_2.sh          # the device machine
#   bash benchmarks/device_session_2.sh --small  # here: tiny sizes, CPU
set -u
cd "$(dirname "$0")/.."
REPO=$PWD
SMALL=0
[ "${1:-}" = "--small" ] && SMALL=1
OUT=${OUT:-/tmp/xpcs-device-session-2}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/xpcs-s2.XXXXXX)
START=$(date +%s)
log() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/main.log"; }
export PYTHONUNBUFFERED=1

# the Python: a JAX that sees a GPU if there is one (see device_session.sh)
PY=${XPCS_PY:-}
if [ -z "$PY" ]; then
    for c in "$REPO/.venv/bin/python" python3; do
        command -v "$c" >/dev/null 2>&1 || continue
        timeout 60 "$c" -c "import jax, h5py, numba, scipy" 2>/dev/null || continue
        PY=$c
        timeout 60 "$c" -c "import jax; jax.devices('gpu')" >/dev/null 2>&1 && break
    done
fi
log "python: $PY; small=$SMALL; cores: $(nproc)"
[ -n "$PY" ] || { log "FATAL: no Python with jax, h5py, numba, scipy"; exit 1; }

OLD=$WORK/old
mkdir -p "$OLD"
if [ -f benchmarks/results/old_tree.tar.gz ]; then
    tar -xzf benchmarks/results/old_tree.tar.gz -C "$OLD"
else
    log "no benchmarks/results/old_tree.tar.gz: the 'before' live runs are skipped"
    OLD=""
fi

if [ "$SMALL" = 1 ]; then
    L_FRAMES=1500; L_SIZE=128; M_FRAMES=20000; G_FRAMES=40000; G_BUDGET=150; LOAD=2
    CORES_L=0,1; CORES_M=0,1; CORES_G=0,1; G_THREADS=2
else
    L_FRAMES=5000; L_SIZE=256; M_FRAMES=100000; G_FRAMES=1000000; G_BUDGET=230; LOAD=6
    CORES_L=0,1; CORES_M=2,3; CORES_G=4-15; G_THREADS=12
fi
# a shorter session: XPCS_S2_PARTS=L (any of L, M, G), XPCS_S2_RUNS=1, XPCS_S2_FRAMES=3000
PARTS=${XPCS_S2_PARTS:-LMG}
L_RUNS=${XPCS_S2_RUNS:-2}
L_FRAMES=${XPCS_S2_FRAMES:-$L_FRAMES}

part_L() {
    local w=$WORK/live
    mkdir -p "$w"
    # the q-map and the simulated frames first, so that no run's time limit pays for them
    log "L: simulating the frames"
    (cd "$REPO/benchmarks" && taskset -c "$CORES_L" timeout -k 5 150 "$PY" -c "
import sys; from pathlib import Path; import live as b
w = Path('$w'); b.prepare(w, $L_SIZE); b.speckle_pool(w, $L_SIZE, 1024)
b.speckle_pool(w, $L_SIZE, $L_FRAMES)") >>"$OUT/live.log" 2>&1
    log "L: frames ready rc=$?"
    for i in $(seq 1 "$L_RUNS"); do
        for tree in old new; do
            local root=$REPO
            if [ "$tree" = old ]; then
                [ -n "$OLD" ] || continue
                root=$OLD
            fi
            log "L: $tree run $i"
            JAX_PLATFORMS=cpu timeout -k 5 110 taskset -c "$CORES_L" "$PY" \
                "$root/benchmarks/live.py" --rates '' --latency-rate 500 --frames "$L_FRAMES" \
                --size "$L_SIZE" --repeats 1 --no-compare --load "$LOAD" --work "$w" \
                --json "$OUT/live_${tree}_$i.json" >>"$OUT/live.log" 2>&1
            log "L: $tree run $i rc=$?"
        done
    done
}

part_M() {
    log "M: MT-2TC $M_FRAMES frames, 2 threads on cores $CORES_M"
    JAX_PLATFORMS=cpu timeout -k 5 300 taskset -c "$CORES_M" "$PY" benchmarks/twotime_ages.py \
        --frames "$M_FRAMES" --size 128 --threads 2 --json "$OUT/mt2tc_2cores.json" \
        >"$OUT/mt2tc_2cores.log" 2>&1
    log "M: rc=$?"
}

part_G() {
    log "G: device_session.sh, budget ${G_BUDGET}s, cores $CORES_G"
    local small=""
    [ "$SMALL" = 1 ] && small=--small
    XPCS_PY=$PY XPCS_SESSION_BUDGET=$G_BUDGET OUT=$WORK/gpu taskset -c "$CORES_G" \
        bash benchmarks/device_session.sh $small >/dev/null 2>&1
    log "G: device_session rc=$?"
    for f in summary.json device.json lsq.json device_jobs.json session.log; do
        [ -f "$WORK/gpu/$f" ] && cp "$WORK/gpu/$f" "$OUT/gpu_$f"
    done
    local left=$((START + 520 - $(date +%s) - 10))
    [ "$SMALL" = 1 ] && left=120
    if [ "$left" -gt 30 ]; then
        log "G: MT-2TC $G_FRAMES frames, $G_THREADS threads, timeout ${left}s"
        JAX_PLATFORMS=cpu timeout -k 5 "$left" taskset -c "$CORES_G" "$PY" \
            benchmarks/twotime_ages.py --frames "$G_FRAMES" --size 128 --threads "$G_THREADS" \
            --json "$OUT/mt2tc_12cores.json" >"$OUT/mt2tc_12cores.log" 2>&1
        log "G: MT-2TC rc=$?"
    else
        log "G: no time left for the 10^6-frame correlator"
    fi
}

PIDS=""
for p in L M G; do
    case $PARTS in *$p*) ;; *) continue ;; esac
    if [ "$SMALL" = 1 ]; then  # two cores here: one part after another
        "part_$p"
    else
        "part_$p" &
        PIDS="$PIDS $!"
    fi
done
[ -n "$PIDS" ] && wait $PIDS
"$PY" - "$OUT" <<'EOF' >>"$OUT/main.log" 2>&1 || true
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
summary = {}
for p in sorted(out.glob("*.json")):
    if p.name == "summary.json":
        continue
    try:
        d = json.loads(p.read_text())
    except Exception as e:
        summary[p.stem] = {"error": repr(e)[:200]}
        continue
    if p.stem.startswith("live_"):
        summary[p.stem] = [{"latency_fit_s": r.get("latency_fit_s"), "stages": r.get("stages"),
                            "end": r.get("end"), "bins": r.get("bins"),
                            "converged": r.get("converged_bins")} for r in d.get("runs", [])]
    elif p.stem.startswith("mt2tc"):
        summary[p.stem] = d
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1)[:3000])
EOF
log "end: $(($(date +%s) - START))s"
# few files come back from the device machine: everything else in one archive
(cd "$OUT" && tar -czf "$WORK/all.tar.gz" --exclude=summary.json --exclude=main.log \
    --exclude=all.tar.gz . && find . -type f ! -name summary.json ! -name main.log -delete \
    && mv "$WORK/all.tar.gz" .)
rm -rf "$WORK"
