#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository root, after
# bench/gpu/prepare-device.sh packed .device/ here: `kcache compare --profile gpu --rounds N` on
# bench/gpu/triton_bench.py, then the probe's timing. Its JSON, Markdown and HTML land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
W=/tmp/kcache-gpu-compare
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node .device/kcache.mjs "$@"; }
export KCACHE_CONFIG=bench/gpu/kcache.yml KCACHE_STORE="$W/store" KCACHE_STATE_DIR="$W/state"
export GITHUB_SHA=0123456789abcdef0123456789abcdef01234567 GITHUB_REF=refs/heads/main
export PYTHONUNBUFFERED=1 RESULTS_DIR="$W/results" TRITON_CACHE_DIR="$W/unused"
kcache compare --profile gpu --rounds "$ROUNDS" --out "$W/compare" > "$OUT/compare-stdout.md" 2> "$OUT/compare-stderr.log"
echo "compare exit $?"
cp "$W/compare/compare.json" "$W/compare/compare.md" "$W/compare/compare.html" "$OUT/"
for i in 1 2 3 4 5; do TRITON_CACHE_DIR=/tmp/x kcache stack --json | grep probeMs; done > "$OUT/probe-ms.txt"
cat "$OUT/compare.md" "$OUT/probe-ms.txt"
