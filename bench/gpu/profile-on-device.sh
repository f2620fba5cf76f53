#!/usr/bin/env bash
# Runs on the GPU machine after bench/gpu/speed-on-device.sh (which generated bench/.data/small-cache
# and large-cache): where kcache's time and memory go, one process per profile, as a CI step runs it.
# CPU profiles (node --cpu-prof) of `kcache key`, a restore that misses, a small restore and a small
# save; heap profiles (node --heap-prof) of the large restore and save. bench/profile-summary.mjs
# reduces them to $OUT/profiles.json (the raw profiles stay in $OUT/prof/).
set -euo pipefail
OUT=${OUT:-/tmp/kcache-speed-out}
W=/tmp/kcache-profile
rm -rf "$W" && mkdir -p "$W" "$OUT/prof"
export PATH="/tmp/kcache-speed/bin:$PWD/.device/tools:$PATH"
K="$PWD/.device/bin/kcache.js"
REV=$(printf 'f%.0s' {1..40})
profile() { # name kind(cpu|heap) cache-folder store command...
  local name=$1 kind=$2 cache=$3 store=$4; shift 4
  local ck=${CACHE_KIND:-triton}
  printf 'caches:\n  - name: %s\n    kind: %s\n    path: %s\nstore:\n  path: %s\nkey:\n  prefix: prof\n' "$ck" "$ck" "$cache" "$store" > "$W/$name.yml"
  mkdir -p "$W/prof-$name"
  KCACHE_CONFIG="$W/$name.yml" KCACHE_STATE_DIR="$W/state-$name" \
    node "--$kind-prof" "--$kind-prof-dir=$W/prof-$name" "$K" "$@" --revision "$REV" > /dev/null 2>> "$OUT/profile.log"
  # One file per thread (the main one and each pack worker), named by the process and thread.
  for f in "$W/prof-$name"/*; do cp "$f" "$OUT/prof/$name-$(basename "$f")"; done
}
for size in small large; do
  printf 'caches:\n  - name: triton\n    kind: triton\n    path: %s\nstore:\n  path: %s\nkey:\n  prefix: prof\n' \
    "$PWD/bench/.data/$size-cache" "$W/store-$size" > "$W/seed-$size.yml"
  KCACHE_CONFIG="$W/seed-$size.yml" KCACHE_STATE_DIR="$W/seed-state-$size" node "$K" save --revision "$REV" > /dev/null 2>&1
done
profile key cpu "$W/empty" "$W/store-small" key
profile miss cpu "$W/empty" "$W/store-none" restore
profile restore-small cpu "$W/dest-small" "$W/store-small" restore
profile save-small cpu "$PWD/bench/.data/small-cache" "$W/store-small-2" save
profile restore-large heap "$W/dest-large" "$W/store-large" restore
profile save-large heap "$PWD/bench/.data/large-cache" "$W/store-large-2" save
# torch.compile's cache (speed-on-device.sh made it where torch is installed): its restore and save, profiled.
if [ -n "${KCACHE_BENCH_INDUCTOR_CACHE:-}" ] && [ -d "$KCACHE_BENCH_INDUCTOR_CACHE" ]; then
  printf 'caches:\n  - name: inductor\n    kind: inductor\n    path: %s\nstore:\n  path: %s\nkey:\n  prefix: prof\n' \
    "$KCACHE_BENCH_INDUCTOR_CACHE" "$W/store-inductor" > "$W/seed-inductor.yml"
  KCACHE_CONFIG="$W/seed-inductor.yml" KCACHE_STATE_DIR="$W/seed-state-inductor" node "$K" save --revision "$REV" > /dev/null 2>&1
  CACHE_KIND=inductor profile restore-inductor cpu "$W/dest-inductor" "$W/store-inductor" restore
  CACHE_KIND=inductor profile save-inductor cpu "$KCACHE_BENCH_INDUCTOR_CACHE" "$W/store-inductor-2" save
fi
node bench/profile-summary.mjs "$OUT"/prof/* > "$OUT/profiles.json"
