#!/usr/bin/env bash
# One GPU session's measurements, in one command, ending within ~470 s (480 s budget):
#   1. the Python to use (a JAX that sees the GPU; see below), the machine and devices
#   2. `xpcsviewer device` and `xpcsviewer device --calibrate` (the routing profile)
#   3. benchmarks/lsq_transfers.py: the least-squares fit's host->device bytes, copies,
#      programs and times, 3600 x 60 on the GPU (and the same with the old per-row
#      transfers emulated, and on the CPU device), then a large case on the GPU
#   4. benchmarks/device_jobs.py's rows (W1, W4, W2, W5, then W1L: what --large runs),
#      one row per call so that a slow row loses only itself
# in the order: 1, 2, LSQ 3600 new and old, W1 W4 W2 W5, LSQ large, W1L, LSQ on the CPU.
# Every step has a timeout, capped by what is left of the deadline; results go to $OUT
# (at most 8 files come back from the device machine): session.log, summary.json,
# device.json, lsq.json, device_jobs.json.
#
# Run from the repository root:
#   bash benchmarks/device_session.sh            # on the GPU machine ($OUT set there)
#   bash benchmarks/device_session.sh --small    # here, on the CPU: tiny sizes, < 3 min
#
# Python: the device machine has no network, so nothing can be installed there. Its
# image's python3 has JAX with the CUDA plugin (and numpy, numpyro, h5py, numba,
# matplotlib, scipy); PySide6, pyqtgraph and dask are missing, which the command-line
# jobs used here do not import. A carried .venv (built here, Python 3.11) does not run
# there. So: $XPCS_PY if set, else the first of .venv/bin/python and python3 whose JAX
# sees a GPU, else the first that imports JAX (CPU only: the GPU rows are then absent
# and summary.json says so); the repository goes on PYTHONPATH (no install needed).
# Do not carry .venv to the device: device_jobs.py runs its jobs with .venv/bin/python
# whenever that exists.
set -u
cd "$(dirname "$0")/.."
REPO=$PWD
SMALL=0
[ "${1:-}" = "--small" ] && SMALL=1
BUDGET=${XPCS_SESSION_BUDGET:-470}
START=$(date +%s)
DEADLINE=$((START + BUDGET))
OUT=${OUT:-/tmp/xpcs-device-session-out}
WORK=$(mktemp -d /tmp/xpcs-session.XXXXXX)
mkdir -p "$OUT"
LOG=$OUT/session.log
: >"$LOG"
export PYTHONUNBUFFERED=1 PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export XPCS_DEVICE_PROFILE=${XPCS_DEVICE_PROFILE:-$WORK/device-profile.json}
[ "$SMALL" = 1 ] && export JAX_PLATFORMS=${JAX_PLATFORMS:-cpu}

log() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$LOG"; }

STEPS=$WORK/steps.tsv
: >"$STEPS"
# step NAME CAP_SECONDS CMD...: runs CMD with a timeout of min(CAP, time left - 15 s),
# stdout+stderr to the log and to $WORK/NAME.out; records rc and seconds
step() {
    local name=$1 cap=$2
    shift 2
    local left=$((DEADLINE - $(date +%s) - 15))
    local lim=$((cap < left ? cap : left))
    if [ "$lim" -lt 10 ]; then
        log "SKIP $name: ${left}s left"
        printf '%s\tskipped\t0\t0\n' "$name" >>"$STEPS"
        return 0
    fi
    log "RUN  $name (timeout ${lim}s): $*"
    local t0 rc
    t0=$(date +%s)
    timeout -k 5 "$lim" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    rc=$?
    cat "$WORK/$name.out" "$WORK/$name.err" >>"$LOG"
    local dt=$(($(date +%s) - t0))
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && log "TIMEOUT $name after ${dt}s"
    log "DONE $name rc=$rc ${dt}s"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$dt" "$lim" >>"$STEPS"
    return 0
}

finish() {
    # merge the step files into the few files that come back
    "${PY:-python3}" - "$WORK" "$OUT" "$SMALL" "${PY:-}" "$START" <<'EOF' >>"$LOG" 2>&1 || true
import json, sys, time
from pathlib import Path
work, out, small, py, start = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])

def load(p):
    try:
        return json.loads(p.read_text())
    except Exception as e:  # a step that timed out or failed leaves none
        return {"missing": p.name, "why": repr(e)[:200]}

steps = []
for line in (work / "steps.tsv").read_text().splitlines():
    n, rc, dt, lim = line.split("\t")
    steps.append({"step": n, "rc": rc, "seconds": int(dt), "timeout": int(lim)})
env = load(work / "env.json")
summary = {"small": small == "1", "python": py, "env": env, "steps": steps,
           "total_seconds": int(time.time()) - start}
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
dev = {"before": load(work / "device_before.json"), "after": load(work / "device_after.json"),
       "profile": load(work / "device-profile.json")}
(out / "device.json").write_text(json.dumps(dev, indent=1) + "\n")
lsq = {p.stem: load(p) for p in sorted(work.glob("lsq_*.json"))}
(out / "lsq.json").write_text(json.dumps(lsq, indent=1) + "\n")
jobs = {p.stem: load(p) for p in sorted(work.glob("jobs_*.json"))}
(out / "device_jobs.json").write_text(json.dumps(jobs, indent=1) + "\n")
print("wrote", sorted(q.name for q in out.iterdir()))
EOF
    log "end: $(($(date +%s) - START))s; results in $OUT"
    rm -rf "$WORK"
}
trap finish EXIT

# --- 1. the Python, the machine ----------------------------------------------------
log "repo $REPO; small=$SMALL; budget ${BUDGET}s; OUT=$OUT"
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || true) \
    | head -5 | tee -a "$LOG"
PROBE='import json, sys, jax, numpy
try:
    gpus = [str(d) for d in jax.devices("gpu")]
except Exception:
    gpus = []
print(json.dumps({"python": sys.executable, "version": sys.version.split()[0],
                  "jax": jax.__version__, "numpy": numpy.__version__,
                  "devices": [str(d) for d in jax.devices()], "gpus": gpus}))'
PY=${XPCS_PY:-}
FIRST=""
if [ -z "$PY" ]; then
    for c in "$REPO/.venv/bin/python" python3; do
        command -v "$c" >/dev/null 2>&1 || continue
        got=$(timeout 45 "$c" -c "$PROBE" 2>/dev/null | tail -1)
        [ -n "$got" ] || continue
        log "candidate $c: $got"
        [ -z "$FIRST" ] && FIRST=$c
        if echo "$got" | grep -q '"gpus": \["'; then PY=$c; break; fi
    done
    PY=${PY:-$FIRST}
fi
if [ -z "$PY" ]; then
    log "FATAL: no Python here imports JAX (tried .venv/bin/python, python3);" \
        "nothing can be installed without network"
    exit 1
fi
timeout 45 "$PY" -c "$PROBE" >"$WORK/env.json" 2>>"$LOG"
if ! grep -q '"gpus": \["' "$WORK/env.json"; then
    log "NOTE: JAX in $PY sees no GPU (jax[cuda] cannot be installed without network):" \
        "running the CPU parts only"
    GPU=0
else
    GPU=1
fi
log "python: $(cat "$WORK/env.json")"
if [ "$PY" != "$REPO/.venv/bin/python" ] && [ -x "$REPO/.venv/bin/python" ]; then
    log "WARNING: .venv/bin/python exists but is not the chosen Python:" \
        "device_jobs.py runs its jobs with it"
fi
XV=("$PY" -m xpcsviewer)

# --- 2. device, calibrate ---------------------------------------------------------
step device_before 40 "${XV[@]}" device --json
cp "$WORK/device_before.out" "$WORK/device_before.json" 2>/dev/null
if [ "$SMALL" = 1 ]; then
    step calibrate 120 "${XV[@]}" device --calibrate --no-nuts
else
    step calibrate 120 "${XV[@]}" device --calibrate
fi
step device_after 30 "${XV[@]}" device --json
cp "$WORK/device_after.out" "$WORK/device_after.json" 2>/dev/null

# --- 3, 4: the fit's transfers and whole jobs, most wanted first (the deadline skips
# what does not fit: W1L and the CPU-device LSQ row come last) --------------------------
LSQ=("$PY" benchmarks/lsq_transfers.py)
if [ "$SMALL" = 1 ]; then
    SIZE=(--files 4 --bins 36) LARGE=(--files 12 --bins 36)
    ROWS=(W4) LATE=() JOBFLAGS=(--cold)
else
    SIZE=(--files 100 --bins 36) LARGE=(--files 1000 --bins 36)
    ROWS=(W1 W4 W2 W5) LATE=(W1L) JOBFLAGS=()
fi
DEV=cpu
[ "$GPU" = 1 ] && DEV=gpu
jobs_row() {
    step "jobs_$1" "$2" "$PY" benchmarks/device_jobs.py --rows "$1" "${JOBFLAGS[@]}" \
        --json "$WORK/jobs_$1.json"
}
step lsq_3600 60 "${LSQ[@]}" "${SIZE[@]}" --device "$DEV" --json "$WORK/lsq_3600_$DEV.json"
step lsq_3600_expand 60 "${LSQ[@]}" "${SIZE[@]}" --device "$DEV" --expand \
    --json "$WORK/lsq_3600_${DEV}_expand.json"
for r in "${ROWS[@]}"; do
    jobs_row "$r" 100
done
step lsq_large 90 "${LSQ[@]}" "${LARGE[@]}" --device "$DEV" --json "$WORK/lsq_large_$DEV.json"
for r in "${LATE[@]}"; do
    jobs_row "$r" 150
done
[ "$GPU" = 1 ] && step lsq_3600_cpu 45 "${LSQ[@]}" "${SIZE[@]}" --device cpu \
    --json "$WORK/lsq_3600_cpu.json"
exit 0
