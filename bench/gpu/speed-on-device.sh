#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository root, after
# bench/gpu/prepare-device.sh packed .device/ here: issue 15's goal table measured there
# (bench/run-speed-bench.ts: the kcache CLI end to end against zstd -d | tar -x and
# tar -c | zstd -T0 -3, interleaved, fresh folders; the fixed costs beside node -e 0; peak RSS of
# each process; an Inductor row from a real torch.compile cache where torch is installed). The raw
# results land in $OUT/speed.json.
set -euo pipefail
OUT=${OUT:-/tmp/kcache-speed-out}
mkdir -p "$OUT"
W=/tmp/kcache-speed
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PWD/.device/tools:$PATH"
{ command -v zstd tar python3 openssl; zstd --version; nproc; df -h /tmp .; } > "$OUT/machine.txt" 2>&1
# The Inductor row from torch.compile's own cache: examples/torch-compile/model.py run once, cold.
case ",${KCACHE_BENCH_SIZES:-inductor}," in
  *,inductor,*)
    if python3 -c "import torch" 2> /dev/null; then
      TORCHINDUCTOR_CACHE_DIR="$W/inductor-cache" python3 examples/torch-compile/model.py \
        > "$OUT/inductor-model.json" 2> "$OUT/inductor-model.err" &&
        export KCACHE_BENCH_INDUCTOR_CACHE="$W/inductor-cache"
    fi
    ;;
esac
KCACHE_BIN="$PWD/.device/bin/kcache.js" KCACHE_BENCH_OUT="$OUT/speed.json" \
  KCACHE_BENCH_COMMAND="bash bench/gpu/prepare-device.sh here, then bash bench/gpu/speed-on-device.sh there" \
  node .device/bench/speed-bench.mjs 2>&1 | tee "$OUT/speed.log"
