#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) after bench/gpu/prepare-device.sh: the bundled
# action (dist/action.mjs) with `lazy: true` as a workflow uses it, with real Triton (issue 41: lazy
# restores under the action, restore step to post step). Runner A: the main step restores (a miss),
# bench/gpu/triton_bench.py compiles, the post step saves. Runner idle: restores and saves without
# running a kernel, so the key records that its last job used nothing. Runner B (another path): the
# main step restores lazily (nothing fetched ahead) and starts kcache's lookup server; the job's Python
# gets kcache's hook from the PYTHONPATH the step wrote to GITHUB_ENV, and every entry it looks up is
# fetched on demand; the post step stops the server and saves. A Triton listener (count_compiles.py)
# counts what each job compiled. Writes $OUT/action-lazy.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-action-lazy-out}
mkdir -p "$OUT"
ROOT=$(pwd)
W=/tmp/kcache-action-lazy
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
cp dist/action.mjs .device/action.mjs # beside .device/node_modules (zstd-napi); python/ is found above
export GITHUB_ACTIONS=true GITHUB_REF=refs/heads/main GITHUB_EVENT_NAME=push PYTHONUNBUFFERED=1
INPUTS=("INPUT_PATH=~/.triton/cache" "INPUT_KEY=triton-lazy" "INPUT_STORE=$W/store" "INPUT_KIND=triton"
  "INPUT_LAZY=true" "INPUT_LOOKUP-ONLY=false" "INPUT_FAIL-ON-CACHE-MISS=false" "INPUT_SAVE-ALWAYS=false"
  "INPUT_STRICT=false" "INPUT_MODE=")
now() { python3 -c 'import time; print(time.time())'; }
# The variables earlier steps wrote to GITHUB_ENV (NAME<<DELIM / value / DELIM), as env(1) arguments.
exported() { [ -f "$1" ] && python3 - "$1" <<'PY'
import sys
lines, i = open(sys.argv[1]).read().split("\n"), 0
while i < len(lines):
    if "<<" in lines[i]:
        k, d = lines[i].split("<<", 1); v = []; i += 1
        while i < len(lines) and lines[i] != d: v.append(lines[i]); i += 1
        print(f"{k}={chr(10).join(v)}")
    i += 1
PY
}
step() { # $1 runner dir, $2 label
  local d=$1; : > "$d/output-$2"; : > "$d/state-$2"
  local env_args; mapfile -t env_args < <(exported "$d/env")
  env "${INPUTS[@]}" "${env_args[@]}" HOME="$d/home" RUNNER_TEMP="$d/temp" GITHUB_OUTPUT="$d/output-$2" \
    GITHUB_ENV="$d/env" GITHUB_STATE="$d/state-$2" $(cat "$d/poststate" 2>/dev/null) \
    node .device/action.mjs > "$d/log-$2" 2>&1
  echo $?
}
job() { # $1 runner name, $2 sha digit, $3 "bench" or "idle"
  local d="$W/$1" t0 t1 t2 t3 code
  mkdir -p "$d/home" "$d/temp" "$d/results" && touch "$d/env"
  export GITHUB_SHA; GITHUB_SHA=$(printf "%040d" 0 | tr 0 "$2")
  t0=$(now); code=$(step "$d" main); t1=$(now)
  sed -n 's/^\([A-Za-z]*\)<<.*/\1/p' "$d/state-main" | while read -r k; do
    v=$(awk -v k="$k" '$0 ~ "^"k"<<" {getline; print; exit}' "$d/state-main"); echo "STATE_$k=$v"; done > "$d/poststate"
  echo '{"compiled": 0, "loaded": 0}' > "$d/counts.json"
  if [ "$3" = bench ]; then
    local env_args; mapfile -t env_args < <(exported "$d/env")
    # BENCH (a script and its arguments) stands in for the benchmark where there is no GPU (a dry run
    # on the simulated Triton: BENCH="demo/sim/workload.py 6 2" SIM_PATH=demo/sim).
    local bench=("$ROOT/bench/gpu/triton_bench.py" --json "$d/results/results.json" --out "$d/results")
    [ -n "${BENCH:-}" ] && read -r -a bench <<< "$BENCH"
    ( cd "$d" && env "${env_args[@]}" HOME="$d/home" COUNTS_FILE="$d/counts.json" \
        PYTHONPATH="${SIM_PATH:+$ROOT/$SIM_PATH:}$(printf '%s\n' "${env_args[@]}" | sed -n 's/^PYTHONPATH=//p')" \
        python3 "$ROOT/bench/gpu/count_compiles.py" "${bench[@]}" > "$d/bench.log" 2>&1 )
  fi
  t2=$(now)
  step "$d" post > /dev/null; t3=$(now)
  python3 - "$d" "$1" "$t0" "$t1" "$t2" "$t3" "$code" <<'PY'
import json, os, sys
d, name, t0, t1, t2, t3, code = sys.argv[1:]
cache = f"{d}/home/.triton/cache"
json.dump({"runner": name, "main_exit": int(code), "restore_s": float(t1) - float(t0),
           "job_s": float(t2) - float(t1), "post_s": float(t3) - float(t2),
           "counts": json.load(open(f"{d}/counts.json")),
           "entries_after_job": len(os.listdir(cache)) if os.path.isdir(cache) else 0,
           "main_log": open(f"{d}/log-main").read()[-2000:], "post_log": open(f"{d}/log-post").read()[-2000:]},
          open(f"{d}/summary.json", "w"), indent=1)
PY
}
job runner-a 1 bench
job runner-idle 2 idle
job runner-b 3 bench
python3 - "$W" "$OUT" <<'PY'
import json, re, sys
w, out = sys.argv[1:]
s = {r: json.load(open(f"{w}/{r}/summary.json")) for r in ("runner-a", "runner-idle", "runner-b")}
lazy = re.search(r"lazy restore: .*", s["runner-b"]["post_log"])
json.dump({"runs": s, "lazy_line_b": lazy.group(0) if lazy else None}, open(f"{out}/action-lazy.json", "w"), indent=1)
print(json.dumps({r: {"counts": v["counts"], "restore_s": round(v["restore_s"], 2), "job_s": round(v["job_s"], 2),
                      "post_s": round(v["post_s"], 2)} for r, v in s.items()}))
print(lazy.group(0) if lazy else "no lazy line: " + s["runner-b"]["post_log"][-800:])
PY
