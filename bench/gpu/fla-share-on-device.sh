#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) with a flash-linear-attention revision exported
# into .fla/ (carried), after bench/gpu/prepare-device.sh packed .device/. kcache's share of FLA's
# warm chunk_kda job (issue 35): one cold `kcache run` at a path A fills the store; then, ROUNDS
# times, the job warm at a fresh path two ways, as one `kcache run` (restore and save are stages of
# its one process) and as three CI steps (`kcache restore`, the benchmark, `kcache save`, each its own
# process). Each row: the job's wall time and kcache's part of it. Rows land in $OUT/fla-share.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
ROUNDS=${ROUNDS:-2}
ROOT=$(pwd)
mkdir -p "$OUT"
W=/tmp/kcache-fla-share
rm -rf "$W" && mkdir -p "$W/bin" "$W/results"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node "$ROOT/.device/kcache.mjs" "$@"; }
now() { python3 -c 'import time; print(time.time())'; }
cp -r "${FLA_SRC:-.fla}" "$W/fla" && cd "$W/fla" || exit 1
git init -q -b main && git add -A && git -c user.name=ci -c user.email=ci@example.com commit -qm fla
export PYTHONPATH=$W/fla PYTHONUNBUFFERED=1 GITHUB_REF=refs/heads/main GITHUB_SHA=$(git rev-parse HEAD)
export KCACHE_CONFIG=$ROOT/bench/gpu/fla-share.yml KCACHE_STORE=$W/store RESULTS_DIR=$W/results
ROWS="$OUT/fla-share-rows.jsonl"
: > "$ROWS"
row() { echo "$1" | tee -a "$ROWS"; }
report() { # label report.json wall
  python3 - "$1" "$2" "$3" <<'PY' | tee -a "$ROWS"
import json, sys
label, path, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
st = {s["name"]: s["seconds"] for s in r["stages"]}
k = r["commands"][0].get("kernels") or {}
print(json.dumps({"label": label, "wall": round(wall, 3), "job": r["seconds"], "exit": r["exitCode"],
  "restore": st.get("restore"), "save": st.get("save"), "command": r["commands"][0]["seconds"],
  "compiled": k.get("compiled"), "loaded": k.get("loaded"), "restored": (r.get("restore") or {}).get("entriesRestored"),
  "saveOutcome": (r.get("save") or {}).get("outcome")}))
PY
}
t0=$(now)
TRITON_CACHE_DIR=$W/a KCACHE_STATE_DIR=$W/state-a kcache run --profile smoke --out "$W/out-cold" > "$OUT/cold.log" 2>&1
report cold "$W/out-cold/kcache-report.json" "$(python3 -c "print($(now) - $t0)")"
for i in $(seq 1 "$ROUNDS"); do
  t0=$(now)
  TRITON_CACHE_DIR=$W/run-$i KCACHE_STATE_DIR=$W/state-run-$i kcache run --profile smoke --out "$W/out-run-$i" > "$OUT/run-$i.log" 2>&1
  report "warm kcache run" "$W/out-run-$i/kcache-report.json" "$(python3 -c "print($(now) - $t0)")"
  # Three steps, as a workflow with the action or the CLI runs them.
  export TRITON_CACHE_DIR=$W/steps-$i KCACHE_STATE_DIR=$W/state-steps-$i
  t0=$(now); kcache restore > "$OUT/steps-$i-restore.log" 2>&1; t1=$(now)
  FLA_CI_ENV=1 FLA_DISABLE_BACKEND_DISPATCH=1 python -m benchmarks.ops.run --op chunk_kda --base '' --modes fwd fwdbwd \
    --custom-shapes '{"smoke": {"B": 1, "T": 1024, "H": 4, "D": 64}}' --json "$W/results/steps-$i.json" > "$OUT/steps-$i-job.log" 2>&1
  rc=$?; t2=$(now); kcache save > "$OUT/steps-$i-save.log" 2>&1; t3=$(now)
  row "$(python3 -c "import json; print(json.dumps({'label': 'warm three steps', 'wall': round($t3 - $t0, 3), 'restore': round($t1 - $t0, 3), 'command': round($t2 - $t1, 3), 'save': round($t3 - $t2, 3), 'exit': $rc, 'cubins': $(find "$W/steps-$i" -name '*.cubin' | wc -l)}))")"
  unset TRITON_CACHE_DIR KCACHE_STATE_DIR
done
python3 - "$ROWS" "$OUT/fla-share.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"rows": rows}, open(sys.argv[2], "w"), indent=1)
PY
