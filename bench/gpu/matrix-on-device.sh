#!/usr/bin/env bash
# Runs on a machine with two GPUs (device kind nvidia-h200-x2) after bench/gpu/prepare-device.sh:
# the profile in bench/gpu/matrix.yml cold (empty store), then with either worker failing (nothing
# may be saved), then warm at another cache path (nothing may compile). Writes $OUT/matrix.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-matrix-out}
mkdir -p "$OUT"
W=/tmp/kcache-matrix
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH" KCACHE_CONFIG=bench/gpu/matrix.yml PYTHONUNBUFFERED=1
export GITHUB_SHA=0123456789abcdef0123456789abcdef01234567 GITHUB_REF=refs/heads/main
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader > "$OUT/gpus.txt"
run() { # $1 = label, $2 = store, $3 = cache path; extra env before the call
  local label=$1
  mkdir -p "$W/$label/results"
  KCACHE_STORE="$2" TRITON_CACHE_DIR="$3" KCACHE_STATE_DIR="$W/$label/state" RESULTS_DIR="$W/$label/results" \
    node .device/kcache.mjs run --profile matrix --out "$W/$label/out" > "$W/$label/stdout.md" 2> "$W/$label/stderr.log"
  local rc=$?
  python3 - "$label" "$rc" "$W/$label" "$2" >> "$OUT/matrix.jsonl" <<'PY'
import glob, json, os, sys
label, rc, d, store = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rep = json.load(open(os.path.join(d, "out", "kcache-report.json")))
workers = {os.path.basename(f)[:-5]: json.load(open(f)) for f in glob.glob(os.path.join(d, "results", "?.json"))}
manifests = glob.glob(os.path.join(store, "**", "*manifest*"), recursive=True)
print(json.dumps({"label": label, "exit": rc, "seconds": rep["seconds"], "passed": rep["passed"],
  "firstFailure": rep["firstFailure"], "restore": (rep["restore"] or {}).get("cacheHit"),
  "save": (rep["save"] or {}).get("outcome"), "saveSkipped": rep["saveSkipped"], "kernels": rep["kernels"],
  "commands": [{"name": c["name"], "exit": c["exitCode"], "seconds": c["seconds"], "devices": c["devices"],
                "compiled": c["kernels"]["compiled"], "loaded": c["kernels"]["loaded"]} for c in rep["commands"]],
  "checks": [[c["name"], c["passed"]] for c in rep["checks"]],
  "workers": {k: {"visible": v["visible"], "device_count": v["device_count"], "uuid": v["uuid"]} for k, v in workers.items()},
  "storeFiles": len(manifests)}))
PY
  echo "$label: exit $rc"
}
run cold "$W/store" "$W/runner-a/triton"
FAIL_WORKER=b run fail-b "$W/store-fail-b" "$W/runner-fail-b/triton"
FAIL_WORKER=a run fail-a "$W/store-fail-a" "$W/runner-fail-a/triton"
run warm "$W/store" "$W/runner-b/home/.triton/cache"
cp "$W/warm/stdout.md" "$OUT/warm-stdout.md"
cp "$W/cold/stdout.md" "$OUT/cold-stdout.md"
python3 -c "import json; print(json.dumps([json.loads(l) for l in open('$OUT/matrix.jsonl')], indent=1))" > "$OUT/matrix.json"
cat "$OUT/matrix.json"
