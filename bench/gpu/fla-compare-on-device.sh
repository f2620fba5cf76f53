#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), after bench/gpu/prepare-device.sh packed .device/
# and a flash-linear-attention revision was exported into .fla/ (both carried). FLA's own
# scripts/run_benchmark_compare.py, unchanged, with FLA CI's FLA_BENCH_* settings, on one op:
#   PHASE=compare: BASE = HEAD (HEAD only edits README.md). kcache's prewarm tunes BASE on main; then
#     ROUNDS rounds, interleaved, of the job as FLA runs it today (no TRITON_CACHE_DIR: the script
#     clears ~/.triton/cache before each side) and of the job through kcache (bench-compare: pinned,
#     both sides warm through restore-revisions, a pull request's scope, isolate on one runner folder).
#   PHASE=edit: HEAD edits fused_recurrent_hgrn's forward kernel (a real edit: the same result,
#     another Triton key). After a prewarm of the second op, one comparison with the salt
#     (bench-compare: the edited op's kernels re-tune on both sides) and one without it
#     (bench-compare-kernel: only the edited kernel re-tunes).
# Everything measured lands in $OUT/fla-$PHASE.json (a row per job) with one log.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
PHASE=${PHASE:-compare}
ROUNDS=${ROUNDS:-3}
OPS=${OPS:-fused_recurrent_hgrn}
ROOT=$(pwd)
mkdir -p "$OUT"
W=/tmp/kcache-fla-$PHASE
rm -rf "$W" && mkdir -p "$W/bin" "$W/rows"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node "$ROOT/.device/kcache.mjs" "$@"; }
now() { python3 -c 'import time; print(time.time())'; }
LOG="$OUT/fla-$PHASE.log"
: > "$LOG"

# FLA's checkout as a runner has it: main at BASE, the pull request's branch at HEAD, origin/main.
FLA=$W/fla
cp -r "${FLA_SRC:-.fla}" "$FLA" && cd "$FLA" || exit 1
g() { git -c user.name=ci -c user.email=ci@example.com "$@"; }
g init -q -b main && g add -A && g commit -qm "BASE: flash-linear-attention bc3b101d" || exit 1
BASE=$(git rev-parse HEAD)
g update-ref refs/remotes/origin/main "$BASE"
g checkout -qb pr
if [ "$PHASE" = edit ]; then
  # One kernel edited: the same arithmetic, another Triton key for fused_recurrent_hgrn_fwd_kernel.
  python3 - <<'PY'
p = "fla/ops/hgrn/fused_recurrent.py"
s = open(p).read()
old = "        b_h = exp(b_g) * b_h + b_x\n"
assert s.count(old) == 1
s = s.replace(old, "        b_h = b_x + exp(b_g) * b_h\n")
open(p, "w").write(s)
PY
  g commit -qam "HEAD: reorder the recurrence's sum in fused_recurrent_hgrn_fwd_kernel"
else
  echo "" >> README.md && g commit -qam "HEAD: README only (identical code)"
fi
HEAD_SHA=$(git rev-parse HEAD)
echo "BASE $BASE HEAD $HEAD_SHA phase $PHASE ops $OPS" | tee -a "$LOG"

export PYTHONPATH=$FLA${EXTRA_PYTHONPATH:+:$EXTRA_PYTHONPATH} PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export FLA_CI_ENV=1 FLA_DISABLE_BACKEND_DISPATCH=1 FLA_BENCH_WARMUP_MS=40 FLA_BENCH_REP_MS=200
export FLA_BENCH_OP_WARMUP_ITERS=6 FLA_BENCH_COOLDOWN_SEC=3 FLA_BENCH_OPS="$OPS"
export KCACHE_CONFIG=$ROOT/bench/gpu/fla-compare.yml KCACHE_STORE=$W/store
RUNNER_CACHE=$W/runner-home/.triton/cache
for n in 1 2; do echo "{\"number\": $n, \"pull_request\": {\"number\": $n}}" > "$W/pr-$n.json"; done

row() { # label kind wall exit results.json [report.json]
  python3 - "$@" >> "$W/rows/all.jsonl" <<'PY'
import json, sys
label, kind, wall, code, results = sys.argv[1:6]
report = sys.argv[6] if len(sys.argv) > 6 else None
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
res, rep = load(results), (load(report) if report else None)
row = {"label": label, "kind": kind, "wall": float(wall), "exit": int(code)}
if res:
    row["flags"] = len(res.get("regressions", [])) + len(res.get("speedups", []))
    row["regressions"] = len(res.get("regressions", []))
    row["medians"] = {side: {f'{r["op"]} {r["mode"]} {r["B"]}x{r["T"]}x{r["H"]}x{r["D"]}': r["median_ms"]
                             for r in res.get(f"{side}_results", [])} for side in ("base", "head")}
if rep:
    row["kernels"] = rep["kernels"]
    row["restore"] = None if not rep["restore"] else {k: rep["restore"].get(k) for k in
        ("matchedKey", "entriesRestored", "entriesPresent", "entriesLocal", "otherKeys", "seconds")}
    a = (rep["restore"] or {}).get("autotune") or {}
    row["withheld"] = [(w["kernel"], w["reason"]) for w in a.get("withheld", [])]
    cmd = next((c for c in rep["commands"] if c["name"] in ("compare", "tune")), None)
    at = (cmd or {}).get("autotune") or {"pinned": [], "fresh": []}
    row["pinned"] = sorted({p["kernel"] for p in at["pinned"]})
    row["fresh"] = sorted({(f["kernel"], f["why"]) for f in at["fresh"]})
    row["pinnedFrom"] = sorted({(p["producer"] or {}).get("profile", "?") + "@" + (p["producer"] or {}).get("revision", "?")[:12] for p in at["pinned"]})
    row["save"] = None if not rep["save"] else {k: rep["save"].get(k) for k in ("outcome", "entriesNew", "leftOut")}
    row["folders"] = rep.get("folders")
    row["stages"] = [(s["name"], round(s["seconds"], 2), s["summary"]) for s in rep["stages"]]
print(json.dumps(row))
PY
}

kcache_job() { # label profile ref sha event
  local label=$1 profile=$2 ref=$3 sha=$4 event=$5 t0 t1 rc
  t0=$(now)
  local pr=${ref#refs/pull/}
  pr=${pr%%/*}
  GITHUB_REF=$ref GITHUB_SHA=$sha GITHUB_EVENT_NAME=$event GITHUB_EVENT_PATH=$W/pr-${pr:-1}.json \
    TRITON_CACHE_DIR=$RUNNER_CACHE KCACHE_STATE_DIR=$W/state-$label \
    kcache run --profile "$profile" --out "$W/out-$label" >> "$LOG" 2>&1
  rc=$?
  t1=$(now)
  local results=$FLA/benchmark_results.json
  [ "$profile" = bench-prewarm ] && results=$FLA/benchmark_main.json
  row "$label" kcache "$(python3 -c "print($t1 - $t0)")" "$rc" "$results" "$W/out-$label/kcache-report.json"
  rm -f "$FLA/benchmark_results.json"
  echo "$label ($profile): exit $rc in $(python3 -c "print(round($t1 - $t0, 1))") s" | tee -a "$LOG"
}

clearing_job() { # label: the job as FLA runs it today: no TRITON_CACHE_DIR, its ~/.triton/cache cleared per side
  local label=$1 t0 t1 rc
  t0=$(now)
  (unset TRITON_CACHE_DIR; HOME=$W/clear-home python scripts/run_benchmark_compare.py --base origin/main \
    --head HEAD --threshold 5.0 --no-fail-on-regression --output "$W/$label.json" --benchmark-ops $OPS) >> "$LOG" 2>&1
  rc=$?
  t1=$(now)
  git checkout -q pr
  row "$label" clearing "$(python3 -c "print($t1 - $t0)")" "$rc" "$W/$label.json"
  echo "$label (FLA's clearing): exit $rc in $(python3 -c "print(round($t1 - $t0, 1))") s" | tee -a "$LOG"
}

# main's prewarm: BASE's benchmark-grade winners, the job a prewarm workflow runs after merges.
g checkout -q main
kcache_job prewarm bench-prewarm refs/heads/main "$BASE" push
g checkout -q pr
if [ "$PHASE" = edit ]; then
  kcache_job edit-salt bench-compare refs/pull/1/merge "$HEAD_SHA" pull_request
  git checkout -q pr
  # Another pull request's scope: it must not find the first comparison's key of this commit.
  kcache_job edit-kernel bench-compare-kernel refs/pull/2/merge "$HEAD_SHA" pull_request
else
  for r in $(seq 1 "$ROUNDS"); do
    clearing_job "clearing-$r"
    kcache_job "kcache-$r" bench-compare refs/pull/1/merge "$HEAD_SHA" pull_request
    git checkout -q pr
  done
fi
cd "$ROOT" && python3 - "$W/rows/all.jsonl" "$OUT/fla-$PHASE.json" "$PHASE" "$OPS" <<'PY'
import json, subprocess, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
machine = subprocess.run("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader", shell=True,
                         capture_output=True, text=True).stdout.strip()
json.dump({"phase": sys.argv[3], "ops": sys.argv[4].split(), "machine": machine, "rows": rows},
          open(sys.argv[2], "w"), indent=1)
for r in rows:
    print(r["label"], r["kind"], round(r["wall"], 1), "exit", r["exit"], "flags", r.get("flags"),
          "pinned", len(r.get("pinned", [])), "fresh", len(r.get("fresh", [])), "withheld", len(r.get("withheld", [])))
PY
