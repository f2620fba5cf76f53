#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) after bench/gpu/prepare-device.sh: the bundled
# action (dist/action.mjs) used as an actions/cache workflow would use it, with real Triton.
# Runner A (HOME=A): the main step restores (a miss), the job runs bench/gpu/triton_bench.py with
# Triton's default cache (~/.triton/cache), the post step saves. Runner B (HOME=B, so another path):
# the main step restores, the same job runs; entries Triton created there count its compiles.
# Writes $OUT/action-dropin.json. The runner is simulated as in test/helpers/action-runner.ts:
# INPUT_* variables, GITHUB_OUTPUT/ENV/STATE files, the post step in a new process with STATE_*.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-dropin-out}
mkdir -p "$OUT"
W=/tmp/kcache-dropin
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
cp dist/action.mjs .device/action.mjs # beside .device/node_modules (zstd-napi: no system zstd there)
export GITHUB_ACTIONS=true GITHUB_REF=refs/heads/main GITHUB_EVENT_NAME=push
export GITHUB_SHA=0123456789abcdef0123456789abcdef01234567 PYTHONUNBUFFERED=1
# Input names with '-' cannot be exported by bash; env(1) passes them as the runner does.
INPUTS=("INPUT_PATH=~/.triton/cache" "INPUT_KEY=triton-Linux-dropin" "INPUT_RESTORE-KEYS=triton-Linux-"
  "INPUT_STORE=$W/store" "INPUT_KIND=auto" "INPUT_LOOKUP-ONLY=false" "INPUT_FAIL-ON-CACHE-MISS=false"
  "INPUT_SAVE-ALWAYS=false" "INPUT_STRICT=false" "INPUT_MODE=")
now() { python3 -c 'import time; print(time.time())'; }
step() { # $1 = runner dir, $2 = label; runs one action step, reading state from $1/state
  local d=$1
  : > "$d/output-$2"; : > "$d/state-$2"
  env "${INPUTS[@]}" HOME="$d/home" RUNNER_TEMP="$d/temp" GITHUB_OUTPUT="$d/output-$2" GITHUB_ENV="$d/env" \
    GITHUB_STATE="$d/state-$2" $(cat "$d/poststate" 2>/dev/null) node .device/action.mjs > "$d/log-$2" 2>&1
  echo $?
}
job() { # $1 = runner name
  local d="$W/$1" t0 t1 t2 t3 code
  mkdir -p "$d/home" "$d/temp"
  t0=$(now); code=$(step "$d" main); t1=$(now)
  # The state the main step saved becomes STATE_* of its post step, as the runner does.
  sed -n 's/^\([A-Za-z]*\)<<.*/\1/p' "$d/state-main" | while read -r k; do
    v=$(awk -v k="$k" '$0 ~ "^"k"<<" {getline; print; exit}' "$d/state-main"); echo "STATE_$k=$v"; done > "$d/poststate"
  ( cd "$d" && HOME="$d/home" RESULTS_DIR="$d/results" python3 "$OLDPWD/bench/gpu/triton_bench.py" \
      --json "$d/results/results.json" --out "$d/results" > "$d/bench.log" 2>&1 ) ; t2=$(now)
  local entries; entries=$(ls "$d/home/.triton/cache" | wc -l)
  step "$d" post > /dev/null; t3=$(now)
  python3 - "$d" "$1" "$t0" "$t1" "$t2" "$t3" "$code" "$entries" <<'PY'
import json, os, sys
d, name, t0, t1, t2, t3, code, entries = sys.argv[1:]
def outputs(f):
    out, lines, i = {}, open(f).read().split("\n"), 0
    while i < len(lines):
        l = lines[i]
        if "<<" in l:
            k, delim = l.split("<<", 1); i += 1; v = []
            while i < len(lines) and lines[i] != delim: v.append(lines[i]); i += 1
            out[k] = "\n".join(v)
        i += 1
    return out
json.dump({"runner": name, "main_exit": int(code), "restore_s": float(t1) - float(t0),
           "job_s": float(t2) - float(t1), "post_save_s": float(t3) - float(t2),
           "entries_after_job": int(entries), "outputs": outputs(f"{d}/output-main"),
           "main_log": open(f"{d}/log-main").read()[-1500:], "post_log": open(f"{d}/log-post").read()[-1500:]},
          open(f"{d}/summary.json", "w"), indent=1)
PY
}
job runner-a
before=$(ls "$W/runner-a/home/.triton/cache" | wc -l)
job runner-b
python3 - "$W" "$OUT" <<'PY'
import json, sys
w, out = sys.argv[1:]
a, b = (json.load(open(f"{w}/{r}/summary.json")) for r in ("runner-a", "runner-b"))
json.dump({"a": a, "b": b, "compiled_on_b": b["entries_after_job"] - a["entries_after_job"],
           "job_ratio_warm_over_cold": b["job_s"] / a["job_s"]}, open(f"{out}/action-dropin.json", "w"), indent=1)
print(json.dumps({"a_job_s": a["job_s"], "b_job_s": b["job_s"], "a_entries": a["entries_after_job"],
                  "b_entries": b["entries_after_job"], "b_hit": b["outputs"].get("cache-hit"),
                  "b_matched": b["outputs"].get("cache-matched-key")}))
PY
