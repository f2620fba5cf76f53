#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), after bench/gpu/prepare-device.sh packed
# .device/ here. torch.compile's cache moved to another path, interleaved over ROUNDS: cold at A
# (empty; it also saves PyTorch's Mega-Cache artifacts), kcache saves what it left, then warm at A
# itself twice (the limit, from the same content as kcache's restore, then its second run), kcache
# (A deleted, restored at B, run, saved), a second kcache run at C (restored from B's save, as the
# second run at A is from the first's), Mega-Cache (load_cache_artifacts into an empty D), and a
# plain copy of the cold cache at E (what actions/cache gives; it is not what a path without kcache
# gets right after a cold run, which also ran two warm runs: that is why it goes last). Each run: first-call seconds,
# torch's cache counters, Triton compiles (kcache's hook, subprocess workers included), files
# written inside and outside the cache folder. Raw rows: $OUT/inductor.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
W=/tmp/kci
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH" PYTHONUNBUFFERED=1 GITHUB_REF=refs/heads/main KCACHE_CONFIG=bench/gpu/inductor.yml
unset TRITON_CACHE_DIR
kcache() { node .device/kcache.mjs "$@"; }
HOOK="$PWD/python/kcache_hook"
ROWS="$OUT/inductor-rows.jsonl"
rm -f "$ROWS"

# One run of the model with its cache at $1, labelled $2; extra model flags after.
model() {
  local cache=$1 label=$2 round=$3
  shift 3
  local tel="$W/tel-$label-$round.jsonl" marker="$W/marker-$label-$round"
  rm -f "$tel"
  find "$cache" -type f 2>/dev/null | sort > "$W/before"
  touch "$marker" && sleep 1
  local t0=$(date +%s.%N)
  TORCHINDUCTOR_CACHE_DIR="$cache" PYTHONPATH="$HOOK" KCACHE_TELEMETRY_FILE="$tel" \
    python3 examples/torch-compile/model.py "$@" > "$W/model.json" 2> "$W/model-$label-$round.err"
  local rc=$? t1=$(date +%s.%N)
  find "$cache" -type f 2>/dev/null | sort > "$W/after"
  local inside=$(comm -13 "$W/before" "$W/after" | wc -l)
  find /tmp /root /home /var/tmp "$PWD" -xdev -type f -newer "$marker" 2>/dev/null | grep -v -e "^$W/" -e "^$cache/" -e "^/proc" -e "^$OUT/" -e '/__pycache__/' > "$W/outside" || true
  python3 - "$label" "$round" "$rc" "$t0" "$t1" "$inside" "$W/outside" "$tel" "$W/model.json" "${RESTORE_S:-null}" >> "$ROWS" <<'PY'
import json, sys
label, rnd, rc, t0, t1, inside, outside, tel, model, restore_s = sys.argv[1:]
try:
    m = json.load(open(model))
except Exception:
    m = {}
compiled = loaded = 0
try:
    for line in open(tel):
        r = json.loads(line)
        if "cache_hit" in r:
            if r["cache_hit"]: loaded += 1
            else: compiled += 1
except FileNotFoundError:
    pass
out = [l.strip() for l in open(outside) if l.strip()]
print(json.dumps({"label": label, "round": int(rnd), "exit": int(rc), "wall_s": float(t1) - float(t0),
  "first_call_s": m.get("first_call_s"), "mega_load_s": m.get("mega_load_s"),
  "restore_s": None if restore_s == "null" else float(restore_s),
  "fxgraph": m.get("fxgraph"), "aotautograd": m.get("aotautograd"),
  "autotune": {k: v for k, v in (m.get("inductor") or {}).items() if "autotune" in k or "coordesc" in k or k.startswith("benchmarking")},
  "triton_compiled": compiled, "triton_loaded": loaded, "files_inside": int(inside),
  "files_outside": len(out), "outside_sample": out[:12]}))
PY
  echo "$label round $round: exit $rc"
}

timed_restore() { # $1 = cache path, $2 = state
  local t0=$(date +%s.%N)
  TORCHINDUCTOR_CACHE_DIR="$1" KCACHE_STATE_DIR="$2" kcache restore --json > "$2.restore.json" 2> "$2.restore.err"
  RESTORE_S=$(python3 -c "print($(date +%s.%N) - $t0)")
}

rev() { printf '%039x%d' "$1" "$2"; }
for i in $(seq 1 "$ROUNDS"); do
  R="$W/r$i" && mkdir -p "$R"
  export KCACHE_STORE="$R/store"
  unset RESTORE_S
  model "$R/A/torchinductor_root" cold "$i" --mega-save "$R/mega.bin"
  # What the cold run left (S1) is saved before anything else runs at A: every warm run starts from it.
  GITHUB_SHA=$(rev "$i" 1) TORCHINDUCTOR_CACHE_DIR="$R/A/torchinductor_root" KCACHE_STATE_DIR="$R/state-a" \
    kcache save --json > "$R/save-a.json" 2> "$R/save-a.err"
  cp -a "$R/A" "$R/A-cold"
  model "$R/A/torchinductor_root" warm-same-path "$i"
  model "$R/A/torchinductor_root" warm-same-path-2 "$i"
  rm -rf "$R/A"
  if [ $((i % 2)) = 1 ]; then order="kcache mega"; else order="mega kcache"; fi
  for way in $order; do
    if [ "$way" = kcache ]; then
      export GITHUB_SHA=$(rev "$i" 2)
      timed_restore "$R/B/cache/inductor" "$R/state-b"
      model "$R/B/cache/inductor" kcache "$i"
      TORCHINDUCTOR_CACHE_DIR="$R/B/cache/inductor" KCACHE_STATE_DIR="$R/state-b" kcache save --json > "$R/save-b.json" 2> "$R/save-b.err"
      export GITHUB_SHA=$(rev "$i" 3)
      timed_restore "$R/C/inductor" "$R/state-c"
      model "$R/C/inductor" kcache-second "$i"
      unset RESTORE_S
    else
      model "$R/D/mega" mega-cache "$i" --mega-load "$R/mega.bin"
    fi
  done
  # A plain copy of the cold cache at another path, the original gone: what actions/cache gives.
  mv "$R/A-cold" "$R/E" && model "$R/E/torchinductor_root" plain-copy "$i"
done
python3 - "$ROWS" "$OUT/inductor.json" "$W" <<'PY'
import glob, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
saves = {f: json.load(open(f)) for f in sorted(glob.glob(sys.argv[3] + "/r*/save-*.json"))}
json.dump({"rows": rows, "saves": {k.split("/")[-2] + "/" + k.split("/")[-1]: {x: v.get(x) for x in ("outcome", "entries", "entriesNew", "bytesUploaded", "skipped")} for k, v in saves.items()}}, open(sys.argv[2], "w"), indent=1)
for r in rows:
    print(r["label"], r["round"], "exit", r["exit"], "first %.2f" % (r["first_call_s"] or -1), "restore", r["restore_s"], "mega_load", r["mega_load_s"],
          "fx", r["fxgraph"], "aot", r["aotautograd"], "triton compiled", r["triton_compiled"], "inside", r["files_inside"], "outside", r["files_outside"], r["outside_sample"][:3])
for k, v in saves.items():
    print(k, json.dumps({x: v.get(x) for x in ("outcome", "entries", "entriesNew", "bytesUploaded")}))
PY
tail -3 "$W"/model-kcache-1.err
