#!/usr/bin/env bash
# Packs what the GPU machine lacks into .device/ (git-ignored; carried by the device tool):
# this machine's Node.js (xz-compressed), kcache bundled into one file, and zstd-napi's binding.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device/node_modules/zstd-napi/build/Release
[ -f .device/node.xz ] || xz -T0 -6 -c "$(readlink -f "$(command -v node)")" > .device/node.xz
npx esbuild src/cli/main.ts --bundle --platform=node --target=node20 --format=esm \
  --external:zstd-napi --outfile=.device/kcache-main.mjs --log-level=warning \
  --banner:js="import { createRequire as __kcacheRequire } from 'node:module'; const require = __kcacheRequire(import.meta.url);"
printf '%s\n' "import { main } from './kcache-main.mjs';" "main(process.argv);" > .device/kcache.mjs
cp -r node_modules/zstd-napi/package.json node_modules/zstd-napi/binding.js node_modules/zstd-napi/dist .device/node_modules/zstd-napi/
cp node_modules/zstd-napi/build/Release/binding.node .device/node_modules/zstd-napi/build/Release/
du -sh .device
