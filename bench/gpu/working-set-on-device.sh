#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), after bench/gpu/prepare-device.sh packed
# .device/ here. Working-set caches against real Triton compiles: bench/gpu/working_set.py at
# revision 0, at revision 1 (four of its twelve kernels edited), then unchanged revisions 2..7,
# each on a fresh runner (a new cache path, a new state folder) against one store, with kcache's
# defaults (keep-unused: 5 saves). Twice: through `kcache run` (the hook and access times), and as
# restore / plain python / save (access times alone). Each run's restore and save reports land in
# $OUT/working-set.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
REVISIONS=${REVISIONS:-7}
mkdir -p "$OUT"
W=/tmp/kcache-ws
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node .device/kcache.mjs "$@"; }
export KCACHE_CONFIG=bench/gpu/working-set.yml GITHUB_REF=refs/heads/main PYTHONUNBUFFERED=1
entries() { find "$1" -mindepth 1 -maxdepth 1 -type d ! -name 'tmp*' ! -name '.kcache*' 2>/dev/null | wc -l; }
findmnt -T /tmp -o TARGET,FSTYPE,OPTIONS > "$OUT/working-set-mount.txt" 2>&1

for mode in run plain; do
  export KCACHE_STORE="$W/store-$mode"
  for rev in $(seq 0 "$REVISIONS"); do
    export GITHUB_SHA=$(printf '%040x' $((rev + 1))) WS_REVISION=$rev
    export TRITON_CACHE_DIR="$W/$mode/runner-$rev/triton" KCACHE_STATE_DIR="$W/$mode/state-$rev"
    d="$W/$mode/rev-$rev" && mkdir -p "$d"
    if [ "$mode" = run ]; then
      kcache run --profile ws --out "$d/out" > "$d/stdout" 2> "$d/stderr"
      echo "$?" > "$d/exit"
    else
      kcache restore --json > "$d/restore.json" 2> "$d/stderr"
      before=$(entries "$TRITON_CACHE_DIR")
      python3 bench/gpu/working_set.py "$rev" > "$d/job.json" 2>> "$d/stderr"
      echo "$?" > "$d/exit"
      echo $(( $(entries "$TRITON_CACHE_DIR") - before )) > "$d/compiled"
      kcache save --json > "$d/save.json" 2>> "$d/stderr"
    fi
    echo "$mode rev $rev: exit $(cat "$d/exit")"
  done
done

python3 - "$W" "$REVISIONS" "$OUT/working-set.json" <<'PY'
import json, os, sys
w, revs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = []
for mode in ("run", "plain"):
    for rev in range(revs + 1):
        d = f"{w}/{mode}/rev-{rev}"
        if mode == "run":
            rep = json.load(open(f"{d}/out/kcache-report.json"))
            restore, save = rep["restore"], rep["save"]
            compiled, loaded = rep["kernels"]["compiled"], rep["kernels"]["loaded"]
        else:
            restore, save = json.load(open(f"{d}/restore.json")), json.load(open(f"{d}/save.json"))
            compiled, loaded = int(open(f"{d}/compiled").read()), None
        rows.append({
            "mode": mode, "revision": rev, "exit": int(open(f"{d}/exit").read()),
            "restoredEntries": restore.get("entriesRestored", 0), "restoredBytes": restore.get("bytesRestored", 0),
            "restoreUsage": restore.get("usage"), "compiled": compiled, "loaded": loaded,
            "saveOutcome": save.get("outcome"), "saveEntries": save.get("entries"), "saveUsage": save.get("usage"),
        })
json.dump(rows, open(out, "w"), indent=1)
for r in rows:
    u = r["saveUsage"] or {}
    print(r["mode"], r["revision"], "exit", r["exit"], "restored", r["restoredEntries"], "compiled", r["compiled"],
          "loaded", r["loaded"], "save", r["saveOutcome"], r["saveEntries"], "source", u.get("source"),
          "live", (u.get("live") or {}).get("entries"), "unused", (u.get("unused") or {}).get("entries"),
          "evicted", (u.get("evicted") or {}).get("entries"))
PY
