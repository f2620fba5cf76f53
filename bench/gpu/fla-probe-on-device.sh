#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) with a flash-linear-attention revision exported into
# .fla/ (carried). Finds out, before a long run, where FLA's HEAD-vs-BASE job spends its time: one
# `pip install -e .`, one `import torch, fla`, then for each op in OPS FLA's run_benchmark_compare.py as
# CI runs it (it clears ~/.triton/cache before each side: both sides cold) and again with TRITON_CACHE_DIR
# at that same folder (the script then clears $TRITON_CACHE_DIR/cache, which Triton never uses, so both
# sides run warm on the winners the first run left: the floor of any cache's job). Every line of the
# script's output is time-stamped. Rows land in $OUT/fla-probe.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
OPS=${OPS:-chunk_simple_gla}
LIMIT=${LIMIT:-400}
ROOT=$(pwd)
mkdir -p "$OUT"
W=/tmp/kcache-fla-probe
rm -rf "$W" && mkdir -p "$W"
LOG="$OUT/fla-probe.log"
: > "$LOG"
FLA=$W/fla
cp -r "${FLA_SRC:-.fla}" "$FLA" && cd "$FLA" || exit 1
g() { git -c user.name=ci -c user.email=ci@example.com "$@"; }
g init -q -b main && g add -A && g commit -qm BASE && g update-ref refs/remotes/origin/main HEAD
g checkout -qb pr && echo "" >> README.md && g commit -qam "HEAD: README only"
export PYTHONPATH=$FLA PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export FLA_CI_ENV=1 FLA_DISABLE_BACKEND_DISPATCH=1 FLA_BENCH_WARMUP_MS=40 FLA_BENCH_REP_MS=200
export FLA_BENCH_OP_WARMUP_ITERS=6 FLA_BENCH_COOLDOWN_SEC=3
stamp() { python3 -u -c '
import sys, time
t0 = time.time()
for line in sys.stdin:
    sys.stdout.write(f"[{time.time() - t0:7.1f}] {line}")'; }
timed() { # label command...: one JSON row with the wall time and exit status
  local label=$1; shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout "$LIMIT" "$@" 2>&1 | stamp >> "$LOG"
  rc=${PIPESTATUS[0]}
  t1=$(date +%s.%N)
  echo "{\"label\": \"$label\", \"wall\": $(python3 -c "print(round($t1 - $t0, 2))"), \"exit\": $rc}" | tee -a "$OUT/rows.jsonl"
}
timed pip-install python -m pip install -e . -q
timed import python -c "import torch, fla, fla.ops; torch.cuda.init()"
for op in $OPS; do
  echo "== $op: clearing" >> "$LOG"
  timed "$op clearing" env HOME=$W/home python scripts/run_benchmark_compare.py --base origin/main --head HEAD \
    --threshold 5.0 --no-fail-on-regression --output "$W/$op-clear.json" --benchmark-ops "$op"
  g checkout -q pr
  echo "== $op: warm" >> "$LOG"
  timed "$op warm" env HOME=$W/home TRITON_CACHE_DIR=$W/home/.triton/cache python scripts/run_benchmark_compare.py \
    --base origin/main --head HEAD --threshold 5.0 --no-fail-on-regression --output "$W/$op-warm.json" --benchmark-ops "$op"
  g checkout -q pr
  echo "$op: $(find "$W/home/.triton/cache" -name '*.cubin' | wc -l) cubins, $(find "$W/home/.triton/cache" -name '*.autotune.json' | wc -l) autotune results" | tee -a "$LOG"
done
python3 - "$OUT/rows.jsonl" "$OUT/fla-probe.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"rows": rows}, open(sys.argv[2], "w"), indent=1)
PY
