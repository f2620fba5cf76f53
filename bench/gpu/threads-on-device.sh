#!/usr/bin/env bash
# Runs on the GPU machine after bench/gpu/speed-on-device.sh (which generates bench/.data/<size>-cache):
# kcache's restore and full save of one cache (SIZE: large, the 1 GB one, or small) with
# $KCACHE_THREADS = each of COUNTS (default 2 4 8 12) beside zstd -d | tar -x, interleaved over ROUNDS
# (default 3), each into a fresh folder or store: how time and peak RSS trade as threads are added.
set -euo pipefail
OUT=${OUT:-/tmp/kcache-speed-out}
W=/tmp/kcache-threads
rm -rf "$W" && mkdir -p "$W"
export PATH="/tmp/kcache-speed/bin:$PWD/.device/tools:$PATH" GITHUB_REF=refs/heads/main
SIZE=${SIZE:-large}
COUNTS=${COUNTS:-2 4 8 12}
SRC=$PWD/bench/.data/$SIZE-cache
cfg() { printf 'caches:\n  - name: triton\n    kind: triton\n    path: %s\nstore:\n  path: %s\nkey:\n  prefix: bench\n' "$1" "$W/store" > "$2"; }
cfg "$SRC" "$W/src.yml"
KCACHE_STATE_DIR=$W/s0 node .device/bin/kcache.js save --revision "$(printf 'e%.0s' {1..40})" -c "$W/src.yml" > /dev/null 2>&1
tar -C "$SRC" --exclude=./.complete -cf - . | zstd -T0 -3 -q -o "$W/cache.tar.zst"
m() { python3 -c 'import resource,subprocess,sys,time; t=time.perf_counter(); subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,check=True); print("%.3f %d" % (time.perf_counter()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss//1024))' "$@"; }
for round in $(seq "${ROUNDS:-3}"); do
  for t in $COUNTS; do
    cfg "$W/k-$t-$round" "$W/k-$t-$round.yml"
    echo "$SIZE restore threads=$t round=$round $(KCACHE_THREADS=$t KCACHE_STATE_DIR=$W/s-$t-$round m node .device/bin/kcache.js restore --revision "$(printf 'e%.0s' {1..40})" -c "$W/k-$t-$round.yml") entries=$(ls "$W/k-$t-$round" | wc -l)"
    printf 'caches:\n  - name: triton\n    kind: triton\n    path: %s\nstore:\n  path: %s\nkey:\n  prefix: bench\n' "$SRC" "$W/save-$t-$round" > "$W/sv-$t-$round.yml"
    echo "$SIZE save threads=$t round=$round $(KCACHE_THREADS=$t KCACHE_STATE_DIR=$W/ss-$t-$round m node .device/bin/kcache.js save --revision "$(printf 'e%.0s' {1..40})" -c "$W/sv-$t-$round.yml")"
  done
  mkdir "$W/t-$round"
  echo "tar round=$round $(m bash -c "zstd -d -q -c $W/cache.tar.zst | tar -x -C $W/t-$round")"
done | tee "$OUT/threads-$SIZE.txt"
