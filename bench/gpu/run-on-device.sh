#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository root, after
# bench/gpu/prepare-device.sh packed .device/ here. Proves kcache against real Triton compiles:
# `kcache run --profile gpu` cold (empty cache, empty store), then warm on another cache path,
# ROUNDS times; once, the cold cache moved to a new path without kcache, for contrast.
# What it measured lands in $OUT: rounds.json, the last round's reports, the machine's facts.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
W=/tmp/kcache-gpu
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node .device/kcache.mjs "$@"; }
now() { python3 -c 'import time; print(time.time())'; }

export KCACHE_CONFIG=bench/gpu/kcache.yml GITHUB_SHA=0123456789abcdef0123456789abcdef01234567
export GITHUB_REF=refs/heads/main PYTHONUNBUFFERED=1 RESULTS_DIR="$W/results"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  command -v zstd || echo "no system zstd: zstd-napi engine"
  for i in 1 2 3; do TRITON_CACHE_DIR=/tmp/x KCACHE_STORE=/tmp/x kcache stack --json; done
} > "$OUT/machine.txt" 2>&1
cp "$(python3 -c 'import triton.runtime.cache as c; print(c.__file__)')" "$OUT/triton-runtime-cache.py"

run() { # $1 = label, $2 = cache path, $3 = state dir, $4.. = extra kcache run flags
  local label=$1 cache=$2 state=$3
  shift 3
  local t0 t1
  t0=$(now)
  TRITON_CACHE_DIR="$cache" KCACHE_STATE_DIR="$state" kcache run --profile gpu --out "$W/out-$label" "$@" \
    > "$W/$label-stdout.md" 2> "$W/$label-stderr.log"
  local rc=$?
  t1=$(now)
  echo "{\"label\": \"$label\", \"exit\": $rc, \"wall\": $(python3 -c "print($t1 - $t0)"), \"report\": $(cat "$W/out-$label/kcache-report.json")}" > "$W/$label.json"
  echo "$label: exit $rc"
}
for i in $(seq 1 "$ROUNDS"); do
  export KCACHE_STORE="$W/store-$i"
  run "cold-$i" "$W/r$i/runner-a/triton-cache" "$W/r$i/state-a"
  run "warm-$i" "$W/r$i/runner-b/home/.triton/cache" "$W/r$i/state-b"
done
# Contrast: the cold cache's bytes moved to a new path, no kcache restore (what a plain copy gives).
mv "$W/r1/runner-a/triton-cache" "$W/r1/moved-cache"
KCACHE_STORE="$W/store-1" run moved "$W/r1/moved-cache" "$W/r1/state-moved" --no-restore --no-save

python3 - "$W" "$OUT/rounds.json" <<'PY'
import glob, json, sys
w, out = sys.argv[1], sys.argv[2]
runs = [json.load(open(f)) for f in sorted(glob.glob(w + "/*.json"))]
json.dump(runs, open(out, "w"), indent=1)
for r in runs:
    rep = r["report"]
    st = {s["name"]: round(s["seconds"], 3) for s in rep["stages"]}
    print(r["label"], "exit", r["exit"], "wall", round(r["wall"], 2), "stages", st, "kernels", rep["kernels"])
PY
N=$ROUNDS
cp "$W/out-cold-$N/kcache-report.json" "$OUT/cold-report.json"
cp "$W/out-warm-$N/kcache-report.json" "$OUT/warm-report.json"
cp "$W/cold-$N-stdout.md" "$OUT/cold-stdout.md"
cp "$W/warm-$N-stdout.md" "$OUT/warm-stdout.md"
tail -n 4 "$OUT/machine.txt"
