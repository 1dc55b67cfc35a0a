#!/usr/bin/env bash
# The real-engine comparison on the knee testbed (docs/testbeds.md, issue 16). Per repetition:
#   1. the knee engine (n-gram, plugin) runs static-k0, static-k2, static-k4 and adaptive through fresh gateways
#      (`specgate bench`; the order reversed on every other repetition);
#   2. the same engine restarted with vLLM's own batch-size table (dynamic speculative decoding, $TABLE) runs
#      static-k4 through a gateway: every request may draft 4, the engine's table decides k at each step
#      (before step 1 on every other repetition).
# Nothing else should run on the machine meanwhile. Results: $OUT/rep<N>.json and $OUT/rep<N>-table.json.
#
#     bash bench/knee_runs.sh     # REPS=3 PORT=8110 TABLE=1-24:2,25-2048:0 OUT=bench/results/knee LOG=/tmp/...
#     SPEC=draft_model bash bench/knee_runs.sh   # the trained draft model drafts instead of n-gram
#     POLICIES="static-k1 static-k3 adaptive" TABLE= bash bench/knee_runs.sh   # other policies; TABLE empty: no table run
#     BENCH_FLAGS="--draft-cost 0.02" POLICIES="adaptive adaptive-draft-cost" TABLE= bash bench/knee_runs.sh
#     python bench/knee_summary.py bench/results/knee
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
PORT=${PORT:-8110}
TABLE=${TABLE-1-24:2,25-2048:0}
POLICIES=${POLICIES:-static-k0 static-k2 static-k4 adaptive}
read -r -a BENCH_FLAGS <<<"${BENCH_FLAGS:-}"  # more `specgate bench` flags, e.g. "--draft-cost 0.02"
OUT=${OUT:-bench/results/knee}
LOG=${LOG:-/tmp/specgate-knee-engine.log}
SPEC=${SPEC:-ngram}
SG=.venv/bin/specgate
mkdir -p "$OUT"

engine_up() {  # extra flags...
    "$SG" engine up --testbed knee --speculation "$SPEC" --port "$PORT" --log "$LOG" "$@" >/dev/null 2>&1 &
    ENGINE_PID=$!
    for _ in $(seq 1 300); do
        curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && return 0
        kill -0 "$ENGINE_PID" 2>/dev/null || { echo "engine exited; see $LOG" >&2; exit 1; }
        sleep 1
    done
    echo "engine not healthy after 300 s" >&2
    exit 1
}

engine_down() {
    kill -TERM "$ENGINE_PID" 2>/dev/null || true
    wait "$ENGINE_PID" 2>/dev/null || true
}
trap engine_down EXIT

run_policies() {  # rep
    local rep=$1 order policies=()
    read -r -a order <<<"$POLICIES"
    for p in "${order[@]}"; do policies+=(--policy "$p"); done
    if ((rep % 2 == 0)); then  # the order reversed
        policies=()
        for ((i = ${#order[@]} - 1; i >= 0; i--)); do policies+=(--policy "${order[i]}"); done
    fi
    engine_up
    "$SG" bench --engine "http://127.0.0.1:$PORT" --model specgate-knee --cost-prior knee --method "$SPEC" "${policies[@]}" "${BENCH_FLAGS[@]}" \
        --out "$OUT/rep$rep.json"
    engine_down
}

run_table() {  # rep
    engine_up --k-per-batch-size "$TABLE"
    "$SG" bench --engine "http://127.0.0.1:$PORT" --model specgate-knee --cost-prior knee --method "$SPEC" --policy static-k4 "${BENCH_FLAGS[@]}" \
        --out "$OUT/rep$1-table.json"
    engine_down
}

for rep in $(seq 1 "$REPS"); do
    if [[ -z "$TABLE" ]]; then
        run_policies "$rep"
    elif ((rep % 2 == 0)); then  # the table's run first on every other repetition too
        run_table "$rep"
        run_policies "$rep"
    else
        run_policies "$rep"
        run_table "$rep"
    fi
done
