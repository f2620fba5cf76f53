#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) with FLA bc3b101d exported into .fla/ (carried),
# after bench/gpu/prepare-device.sh packed .device/. restore: lazy on a real job (issue 41): FLA's
# chunk_kda smoke benchmark cold through `kcache run --lazy` (its packs hold each entry in frames of
# its own), then warm once more at another revision so the key records which entries the job used.
# Then, ROUNDS times at fresh paths, the warm job restored eagerly and lazily (no save): wall, restore
# seconds, bytes read, kernels compiled, entries fetched ahead and on demand. Last, a key whose last
# job used nothing: the job fetches every entry it needs on demand. Rows land in
# $OUT/fla-lazy.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
ROUNDS=${ROUNDS:-2}
ROOT=$(pwd)
mkdir -p "$OUT"
W=/tmp/kcache-fla-lazy
# ONLY_ON_DEMAND=1 reuses the store a run before left on this machine: only the last two jobs run.
[ -n "${ONLY_ON_DEMAND:-}" ] || rm -rf "$W"
mkdir -p "$W/bin" "$W/results"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node "$ROOT/.device/kcache.mjs" "$@"; }
now() { python3 -c 'import time; print(time.time())'; }
[ -d "$W/fla" ] || cp -r "${FLA_SRC:-.fla}" "$W/fla"
cd "$W/fla" || exit 1
export PYTHONPATH=$W/fla PYTHONUNBUFFERED=1 GITHUB_REF=refs/heads/main GITHUB_EVENT_NAME=push
export KCACHE_CONFIG=$ROOT/bench/gpu/fla-lazy.yml KCACHE_STORE=$W/store RESULTS_DIR=$W/results
ROWS="$OUT/fla-lazy-rows.jsonl"
[ -n "${ONLY_ON_DEMAND:-}" ] || : > "$ROWS"
# label profile revision-digit flags...: one `kcache run` at a fresh path, its report as one row.
job() {
  local label=$1 profile=$2 rev=$3; shift 3
  local tag; tag=$(echo "$label" | tr -c 'a-z0-9' '-')
  local t0; t0=$(now)
  GITHUB_SHA=$(printf "%040d" 0 | tr 0 "$rev") TRITON_CACHE_DIR=$W/c-$tag KCACHE_STATE_DIR=$W/s-$tag \
    kcache run --profile "$profile" --out "$W/out-$tag" "$@" > "$OUT/$tag.log" 2>&1
  python3 - "$label" "$W/out-$tag/kcache-report.json" "$(python3 -c "print($(now) - $t0)")" "$W/c-$tag" <<'PY' | tee -a "$ROWS"
import json, os, sys
label, path, wall, cache = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
st = {s["name"]: s["seconds"] for s in r["stages"]}
rs = r.get("restore") or {}
k = r["commands"][0].get("kernels") or {}
print(json.dumps({"label": label, "wall": round(wall, 3), "exit": r["exitCode"], "restore": st.get("restore"),
  "command": r["commands"][0]["seconds"], "compiled": k.get("compiled"), "loaded": k.get("loaded"),
  "entriesRestored": rs.get("entriesRestored"), "bytesDownloaded": rs.get("bytesDownloaded"),
  "restoreLazy": rs.get("lazy"), "lazy": r.get("lazy"), "saveOutcome": (r.get("save") or {}).get("outcome"),
  "entriesInFolder": len([e for e in os.listdir(cache) if not e.startswith(".") and e != "cache"])}))
PY
}
if [ -z "${ONLY_ON_DEMAND:-}" ]; then
  job "cold" smoke 1 --lazy
  job "seed: warm, records use" smoke 2 --lazy
  for i in $(seq 1 "$ROUNDS"); do
    job "eager $i" smoke 3 --no-save
    job "lazy $i" smoke 3 --lazy --no-save
  done
fi
# A job that ran no kernel at all (a docs build on the same runner): its save records no use, so the
# next lazy restore fetches nothing ahead and the benchmark gets every entry it looks up on demand.
job "seed: a job that used nothing" idle 4 --lazy
job "lazy, every entry on demand" smoke 5 --lazy --no-save
python3 - "$ROWS" "$OUT/fla-lazy.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"rows": rows}, open(sys.argv[2], "w"), indent=1)
PY
