#!/usr/bin/env bash
# Issue 51 on the GPU machine, with a flash-linear-attention revision exported into .fla/ and
# .device/ packed by bench/gpu/prepare-device.sh (both carried). FLA's chunk_kda smoke benchmark:
#   base: `kcache run` on main, cold: saves its key and its compile plan;
#   a pull request edits one KDA kernel (recompute_w_u_fwd_kda_kernel: the same product, operands swapped);
#   pr-gpu: the pull request's GPU job restoring main's key, no CPU prewarm (--no-save);
#   cpu: `kcache prewarm --cpu` with no GPU visible (CUDA_VISIBLE_DEVICES empty; nvidia-smi's compute
#     processes sampled meanwhile; each worker says whether it ever mapped libcuda);
#   pr-gpu-after: the same GPU job at a fresh path, restoring the key the CPU prewarm saved.
# Rows land in $OUT/cpu-prewarm.json. With .devstore/base-store.tar carried, the base job is skipped.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
ROOT=$(pwd)
mkdir -p "$OUT"
W=/tmp/kcache-cpu-prewarm
rm -rf "$W" && mkdir -p "$W/bin" "$W/results"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$ROOT/.device/tools:$PATH"
kcache() { node "$ROOT/.device/kcache.mjs" "$@"; }
now() { python3 -c 'import time; print(time.time())'; }
cp -r "${FLA_SRC:-.fla}" "$W/fla" && cd "$W/fla" || exit 1
g() { git -c user.name=ci -c user.email=ci@example.com "$@"; }
g init -q -b main && g add -A && g commit -qm "BASE: flash-linear-attention" || exit 1
BASE=$(git rev-parse HEAD)
export PYTHONPATH=$W/fla PYTHONUNBUFFERED=1 KCACHE_CONFIG=$ROOT/bench/gpu/cpu-prewarm.yml
export KCACHE_STORE=$W/store RESULTS_DIR=$W/results
ROWS="$OUT/rows.jsonl"; : > "$ROWS"
report() { # label report.json wall
  python3 - "$1" "$2" "$3" <<'PY' | tee -a "$ROWS"
import json, sys
label, path, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
k = r["commands"][0].get("kernels") or {}
print(json.dumps({"label": label, "wall": round(wall, 3), "exit": r["exitCode"], "commandExit": r["commands"][0].get("exitCode"),
  "command": r["commands"][0]["seconds"], "compiled": k.get("compiled"), "loaded": k.get("loaded"),
  "restoredKey": (r.get("restore") or {}).get("matchedKey"), "saveOutcome": (r.get("save") or {}).get("outcome"),
  "cpuPrewarm": r.get("cpuPrewarm"), "compiledKernels": k.get("compiledKernels")}))
PY
}
if [ -f "$ROOT/.devstore/base-store.tar" ]; then
  mkdir -p "$W/store" && tar -xf "$ROOT/.devstore/base-store.tar" -C "$W/store"
  echo '{"label": "base", "reused": true}' | tee -a "$ROWS"
else
  t0=$(now)
  GITHUB_REF=refs/heads/main GITHUB_SHA=$BASE TRITON_CACHE_DIR=$W/base KCACHE_STATE_DIR=$W/state-base \
    kcache run --profile smoke --out "$W/out-base" > "$OUT/base.log" 2>&1
  report base "$W/out-base/kcache-report.json" "$(python3 -c "print($(now) - $t0)")"
  tar -cf "$OUT/base-store.tar" -C "$W/store" . ; ls -la "$OUT/base-store.tar"
fi
# The pull request: one KDA kernel's source changed (same arithmetic, operands of a product swapped).
g checkout -qb pr
python3 - <<'PY'
p = "fla/ops/kda/wy_fast.py"
s = open(p).read()
old = "        b_kb = b_k * b_b[:, None]\n"
assert s.count(old) == 1
open(p, "w").write(s.replace(old, "        b_kb = b_b[:, None] * b_k\n"))
PY
g commit -qam "PR: recompute_w_u_fwd_kda_kernel, operands of one product swapped"
echo '{"number": 51, "pull_request": {"number": 51, "head": {"repo": {"fork": false}}}}' > "$W/pr.json"
export GITHUB_EVENT_NAME=pull_request GITHUB_REF=refs/pull/51/merge GITHUB_EVENT_PATH=$W/pr.json GITHUB_HEAD_REF=pr GITHUB_BASE_REF=main GITHUB_SHA=$(git rev-parse HEAD)
t0=$(now)
TRITON_CACHE_DIR=$W/pr-gpu KCACHE_STATE_DIR=$W/state-pr-gpu kcache run --profile smoke --no-save --out "$W/out-pr-gpu" > "$OUT/pr-gpu.log" 2>&1
report "pr-gpu (no CPU prewarm)" "$W/out-pr-gpu/kcache-report.json" "$(python3 -c "print($(now) - $t0)")"
# No GPU visible to the prewarm; nvidia-smi's compute processes sampled all the while.
( while :; do nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader >> "$W/smi.txt" 2>&1; sleep 0.5; done ) &
SMI=$!
t0=$(now)
CUDA_VISIBLE_DEVICES= TRITON_CACHE_DIR=$W/cpu KCACHE_STATE_DIR=$W/state-cpu kcache prewarm --cpu --profile smoke --json > "$W/cpu.json" 2> "$OUT/cpu.log"
rc=$?
t1=$(now)
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
python3 - "$W/cpu.json" "$(python3 -c "print($t1 - $t0)")" "$rc" "$W/smi.txt" <<'PY' | tee -a "$ROWS"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    r = {"error": repr(e)}
smi = [l.strip() for l in open(sys.argv[4]) if l.strip()] if __import__("os").path.exists(sys.argv[4]) else []
print(json.dumps({"label": "cpu prewarm (CUDA_VISIBLE_DEVICES empty)", "wall": round(float(sys.argv[2]), 3), "exit": int(sys.argv[3]),
  "report": r, "gpuProcessesSeen": sorted(set(smi))[:20]}))
PY
t0=$(now)
TRITON_CACHE_DIR=$W/pr-after KCACHE_STATE_DIR=$W/state-pr-after kcache run --profile smoke --no-save --out "$W/out-pr-after" > "$OUT/pr-after.log" 2>&1
report "pr-gpu after CPU prewarm" "$W/out-pr-after/kcache-report.json" "$(python3 -c "print($(now) - $t0)")"
python3 - "$ROWS" "$OUT/cpu-prewarm.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"rows": rows}, open(sys.argv[2], "w"), indent=1)
PY
cp "$W/out-pr-after/kcache-report.json" "$OUT/pr-after-report.json" 2>/dev/null
tail -c 3000 "$OUT/cpu.log"
