#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), after bench/gpu/prepare-device.sh packed .device/
# here. A pull request's job and a default-branch job at once on one runner folder, without isolate,
# with real Triton kernels (bench/gpu/persistent_job.py): the pull request compiles kernels 0-7 (which
# the default branch's job also runs) and 100-115 of its own while the default branch's job compiles
# 0-15. Twice: under `kcache run` (the hook records what each job's processes wrote) and as a
# workflow's steps (kcache restore, the job, kcache save: no hook). Then a fresh folder restores the
# default branch's key: none of the pull request's kernels may be in it. Lands in $OUT/beside.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
REPO=$(pwd)
mkdir -p "$OUT"
W=/tmp/kcache-beside
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH" REPO PYTHONUNBUFFERED=1 KCACHE_CONFIG="$REPO/bench/gpu/beside.yml"
kcache() { node "$REPO/.device/kcache.mjs" "$@"; }

job_env() { # pr|main flavour
  local who=$1 flavour=$2
  printf '%s\n' "export KCACHE_STORE=$W/$flavour/store TRITON_CACHE_DIR=$W/$flavour/home/.triton/cache"
  printf '%s\n' "export KCACHE_STATE_DIR=$W/$flavour/$who/state GITHUB_ACTIONS= GITHUB_EVENT_PATH=$W/$flavour/$who/event.json"
  if [ "$who" = pr ]; then
    echo '{"number": 7, "pull_request": {"number": 7}}' > "$W/$flavour/$who/event.json"
    printf '%s\n' "export GITHUB_REF=refs/pull/7/merge GITHUB_EVENT_NAME=pull_request GITHUB_SHA=$(printf '%040x' 2)"
  else
    echo '{"repository": {"default_branch": "main"}}' > "$W/$flavour/$who/event.json"
    printf '%s\n' "export GITHUB_REF=refs/heads/main GITHUB_EVENT_NAME=push GITHUB_SHA=$(printf '%040x' 1)"
  fi
}

one_job() { # who flavour pairs
  local who=$1 flavour=$2 d="$W/$2/$1"
  eval "$(job_env "$who" "$flavour")"
  export PAIRS=$3 JOB_OUT=$d
  cd "$d"
  if [ "$flavour" = run ]; then
    kcache run -p job --json > "$d/run.json" 2> "$d/run.log"
    cp "$d"/.kcache/job/telemetry/kernels.jsonl "$d/telemetry.jsonl" 2>/dev/null
  else
    kcache restore --json > "$d/restore.json" 2> "$d/restore.log"
    bash "$REPO/bench/gpu/beside_job.sh"
    kcache save --json > "$d/save.json" 2> "$d/save.log"
  fi
  cd "$REPO"
}

for flavour in run steps; do
  mkdir -p "$W/$flavour/pr" "$W/$flavour/main"
  # The pull request's job: the kernels the default branch's job also runs, then 16 of its own; the
  # default branch's job beside it from two seconds later.
  ( one_job pr "$flavour" "8:0 16:100" ) &
  prpid=$!
  sleep 2
  ( one_job main "$flavour" "16:0" ) &
  mainpid=$!
  wait $prpid $mainpid
  # A fresh runner restores the default branch's key.
  (eval "$(job_env main "$flavour")"; export TRITON_CACHE_DIR="$W/$flavour/fresh" KCACHE_STATE_DIR="$W/$flavour/fresh-state"
   kcache restore --json > "$W/$flavour/fresh.json" 2> "$W/$flavour/fresh.log")
  echo "$flavour done"
done

python3 - "$W" "$OUT/beside.json" <<'PY'
import json, os, sys
w, out = sys.argv[1], sys.argv[2]
def last_json(path):
    try:
        lines = [l for l in open(path).read().splitlines() if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except OSError:
        return None
res = {}
for flavour in ("run", "steps"):
    d = f"{w}/{flavour}"
    pr = (last_json(f"{d}/pr/job-8-0.out") or {}).get("compiledFolders", []) + (last_json(f"{d}/pr/job-16-100.out") or {}).get("compiledFolders", [])
    main = (last_json(f"{d}/main/job-16-0.out") or {}).get("compiledFolders", [])
    fresh = f"{d}/fresh"
    in_key = sorted(e for e in os.listdir(fresh) if not e.startswith(".kcache")) if os.path.isdir(fresh) else []
    report = json.load(open(f"{d}/main/run.json"))["save"] if flavour == "run" else json.load(open(f"{d}/main/save.json"))
    wrote = []
    if os.path.exists(f"{d}/main/telemetry.jsonl"):
        wrote = sorted({os.path.basename(json.loads(l)["wrote"]) for l in open(f"{d}/main/telemetry.jsonl") if '"wrote"' in l})
    res[flavour] = {
        "prCompiled": len(pr), "mainCompiled": len(main),
        "prKernelsInDefaultKey": len([e for e in in_key if e in pr and e not in main]),
        "mainKernelsInDefaultKey": len([e for e in in_key if e in main]),
        "defaultKeyEntries": len(in_key),
        "leftOut": report.get("leftOut", {}).get("otherJobs"), "besideUntrusted": report.get("besideUntrusted"),
        "entriesNew": report.get("entriesNew"),
        "hookWroteCoversCompiled": all(m in wrote for m in main) if flavour == "run" else None,
        "hookWrote": len(wrote),
    }
import subprocess
machine = subprocess.run("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader", shell=True, capture_output=True, text=True).stdout.strip()
import torch, triton
json.dump({"machine": machine, "torch": torch.__version__, "triton": triton.__version__, **res}, open(out, "w"), indent=1)
print(json.dumps(res, indent=1))
PY
for f in run steps; do for who in pr main; do grep -h -i "warn\|error" "$W/$f/$who/"*.log 2>/dev/null | head -5; done; done
