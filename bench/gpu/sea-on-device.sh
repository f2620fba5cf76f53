#!/usr/bin/env bash
# Issue 50's start-up bound on the GPU host (16 cores, no Node.js of its own): the single executable's
# `kcache key` beside `node -e 0` and the npm package's, by build/bench/run-sea-bench.js as on the
# development machine, in a section and raw file of their own (KCACHE_BENCH_HOST=gpu-host).
# Carried (ignored paths): build/sea-pair.tar.xz (bin/node and kcache-linux-x64 in one xz stream with a
# dictionary that spans both, so the executable's copy of node costs nothing more), build/bench,
# build/test, build/src and build/cli (`npm run build`). Made here by:
#   mkdir -p /tmp/pair/bin && cp "$(command -v node)" /tmp/pair/bin/ && cp build/sea/kcache-linux-x64 /tmp/pair/
#   tar -C /tmp/pair -cf - bin kcache-linux-x64 | xz -T1 --lzma2=preset=6,dict=192MiB > build/sea-pair.tar.xz
set -euo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
W=/tmp/kcache-sea
rm -rf "$W" && mkdir -p "$W" "$OUT"
xz -dc build/sea-pair.tar.xz | tar -x -C "$W"
export PATH="$W/bin:$PATH"
KCACHE_BENCH_HOST=gpu-host KCACHE_BENCH_ROUNDS=${KCACHE_BENCH_ROUNDS:-21} node build/bench/run-sea-bench.js "$W/kcache-linux-x64"
cp bench/results/bench-sea-gpu-host.json "$OUT/"
sed -n '/<!-- bench:sea-gpu-host:start -->/,/<!-- bench:sea-gpu-host:end -->/p' BENCHMARKS.md > "$OUT/sea-gpu-host.md"
