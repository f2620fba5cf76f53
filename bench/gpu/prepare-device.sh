#!/usr/bin/env bash
# Packs what the GPU machine lacks into .device/ (git-ignored; carried by the device tool):
# this machine's Node.js (xz-compressed), kcache's CLI bundle, the speed benchmark, and zstd-napi's binding.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device/node_modules/zstd-napi/build/Release
[ -f .device/node.xz ] || xz -T0 -6 -c "$(readlink -f "$(command -v node)")" > .device/node.xz
# The CLI as the package ships it: bin/kcache.js over the split bundle (scripts/bundle-cli.mjs).
mkdir -p .device/bin .device/build .device/bench
cp bin/kcache.js .device/bin/kcache.js
node scripts/bundle-cli.mjs .device/build/cli
printf '%s\n' "import './bin/kcache.js';" > .device/kcache.mjs
# The end-to-end speed benchmark (bench/run-speed-bench.ts), for bench/gpu/speed-on-device.sh.
npx esbuild bench/run-speed-bench.ts --bundle --platform=node --target=node20 --format=esm \
  --outfile=.device/bench/speed-bench.mjs --log-level=warning \
  --banner:js="import { createRequire as __kcacheRequire } from 'node:module'; const require = __kcacheRequire(import.meta.url);"
# The GPU machine has no zstd: bring this machine's (it links liblzma and liblz4 beside libc).
mkdir -p .device/tools/lib
cp /usr/bin/zstd .device/tools/zstd.bin
cp "$(ldd /usr/bin/zstd | awk '/liblzma/ {print $3}')" "$(ldd /usr/bin/zstd | awk '/liblz4/ {print $3}')" .device/tools/lib/
printf '%s\n' '#!/bin/sh' 'd=$(dirname "$(readlink -f "$0")")' 'LD_LIBRARY_PATH="$d/lib" exec "$d/zstd.bin" "$@"' > .device/tools/zstd
chmod +x .device/tools/zstd
cp -r node_modules/zstd-napi/package.json node_modules/zstd-napi/binding.js node_modules/zstd-napi/dist .device/node_modules/zstd-napi/
cp node_modules/zstd-napi/build/Release/binding.node .device/node_modules/zstd-napi/build/Release/
du -sh .device
