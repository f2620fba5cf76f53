#!/usr/bin/env bash
# Runs on the GPU machine after bench/gpu/speed-on-device.sh (which generated bench/.data/small-cache,
# large-cache and torch.compile's cache in /tmp/kcache-speed/inductor-cache): where a 108 MB, a 1 GB
# and a torch.compile restore's time goes, as a job's first command runs them (a fresh state folder).
# Two full saves and two restores each under node --cpu-prof, main thread and workers:
# $OUT/restore-phases.json and save-phases.json say when the main thread did what
# (bench/profile-phases.mjs), $OUT/restore-profiles.json what each thread spent its time on
# (bench/profile-summary.mjs), $OUT/restore-profile.log the commands' own reports.
set -euo pipefail
OUT=${OUT:-/tmp/kcache-speed-out}
W=/tmp/kcache-restore-profile
rm -rf "$W" && mkdir -p "$W/prof" "$W/saves" "$OUT"
export PATH="/tmp/kcache-speed/bin:$PWD/.device/tools:$PATH" GITHUB_REF=refs/heads/main
K="$PWD/.device/bin/kcache.js"
REV=$(printf 'f%.0s' {1..40})
cfg() { printf 'caches:\n  - name: %s\n    kind: %s\n    path: %s\nstore:\n  path: %s\nkey:\n  prefix: prof\n' "$1" "$1" "$2" "$3" > "$4"; }
seed() { # what kind folder (skipped where the benchmark did not make it): two profiled full saves
  [ -d "$3" ] || return 0
  for r in 1 2; do
    store="$W/store-$1" && [ "$r" = 2 ] && store="$W/store-$1-again"
    cfg "$2" "$3" "$store" "$W/seed-$1-$r.yml"
    KCACHE_STATE_DIR="$W/seed-state-$1-$r" node --cpu-prof --cpu-prof-dir="$W/saves/$1-$r" "$K" save -v \
      -c "$W/seed-$1-$r.yml" --revision "$REV" >> "$OUT/restore-profile.log" 2>&1
    for f in "$W/saves/$1-$r"/*; do mv "$f" "$W/saves/$1-$r-$(basename "$f")"; done
  done
}
seed small triton "$PWD/bench/.data/small-cache"
seed large triton "$PWD/bench/.data/large-cache"
seed inductor inductor /tmp/kcache-speed/inductor-cache
for r in 1 2; do
  for what in small large inductor; do
    kind=triton && [ "$what" = inductor ] && kind=inductor
    [ -d "$W/store-$what" ] || continue
    cfg "$kind" "$W/dest-$what-$r" "$W/store-$what" "$W/$what-$r.yml"
    start=$(date +%s%N)
    KCACHE_STATE_DIR="$W/state-$what-$r" node --cpu-prof --cpu-prof-dir="$W/prof/$what-$r" "$K" restore -v \
      -c "$W/$what-$r.yml" --revision "$REV" >> "$OUT/restore-profile.log" 2>&1
    echo "$what round $r: $(( ($(date +%s%N) - start) / 1000000 )) ms under the profiler" >> "$OUT/restore-profile.log"
    for f in "$W/prof/$what-$r"/*; do mv "$f" "$W/prof/$what-$r-$(basename "$f")"; done
  done
done
node bench/profile-phases.mjs \
  loadAndTranslate,validatedConfig,decodeManifest,readPack,runRewrites,scan,withholdAutotune,stateAfterRestore,stampUnread \
  "$W"/prof/*.0.*.cpuprofile > "$OUT/restore-phases.json"
node bench/profile-phases.mjs \
  loadAndTranslate,validatedConfig,scanForSave,prepare,runRewrites,writePacks,buildPack,commitManifest \
  "$W"/saves/*.0.*.cpuprofile > "$OUT/save-phases.json"
node bench/profile-summary.mjs "$W"/prof/*.cpuprofile "$W"/saves/*.cpuprofile > "$OUT/restore-profiles.json"
