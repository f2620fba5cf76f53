#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), after bench/gpu/prepare-device.sh packed
# .device/ here. A persistent runner's cache folder with real Triton kernels (bench/gpu/persistent_job.py):
#  A. The folder is warm from earlier jobs (KERNELS kernels compiled without kcache) and the store is
#     empty: kcache restore misses, then the job runs: it must compile none of what the folder held.
#     A job with NEW more kernels compiles exactly those, and the save uploads only them.
#  B. ROUNDS rounds, interleaved: the warm job run directly in the folder (no kcache), then as an
#     isolated job (kcache restore --isolate, the job in its own folder, kcache save --isolate, which
#     merges it back): what building and merging the job's folder costs beside the job's warm time.
# Everything measured lands in $OUT/persistent.json.
set -uo pipefail
OUT=${OUT:-/tmp/kcache-gpu-out}
KERNELS=${KERNELS:-48}
NEW=${NEW:-8}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
W=/tmp/kcache-persistent
rm -rf "$W" && mkdir -p "$W/bin"
xz -d -c .device/node.xz > "$W/bin/node" && chmod +x "$W/bin/node"
export PATH="$W/bin:$PATH"
kcache() { node .device/kcache.mjs "$@"; }
export KCACHE_CONFIG=bench/gpu/persistent.yml GITHUB_REF=refs/heads/main PYTHONUNBUFFERED=1
export KCACHE_STORE="$W/store" TRITON_CACHE_DIR="$W/home/.triton/cache"
P=$TRITON_CACHE_DIR
job() { python3 "${JOB_SCRIPT:-bench/gpu/persistent_job.py}" "$@"; }
findmnt -T /tmp -o TARGET,FSTYPE,OPTIONS > "$OUT/persistent-mount.txt" 2>&1

# The runner before kcache: earlier jobs compiled KERNELS kernels into its folder.
job "$KERNELS" > "$W/cold.json"
ls -A "$P" | grep -v '^\.kcache' | sort > "$W/before.txt"

# A. A restore that misses, then the job; then a job with NEW more kernels, and the save.
export GITHUB_SHA=$(printf '%040x' 1) KCACHE_STATE_DIR="$W/state-a"
kcache restore --json > "$W/a-restore.json" 2> "$W/a-restore.log"
job "$KERNELS" > "$W/a-job.json"
job $((KERNELS + NEW)) > "$W/a-job-new.json"
kcache save --json > "$W/a-save.json" 2> "$W/a-save.log"

# B. Isolation's cost, interleaved with the plain warm job.
for r in $(seq 1 "$ROUNDS"); do
  job $((KERNELS + NEW)) > "$W/b-plain-$r.json"
  export GITHUB_SHA=$(printf '%040x' $((r + 1))) KCACHE_STATE_DIR="$W/state-b-$r" GITHUB_ENV="$W/env-$r"
  : > "$GITHUB_ENV"
  kcache restore --isolate --json > "$W/b-restore-$r.json" 2> "$W/b-restore-$r.log"
  (set -a; . "$GITHUB_ENV"; job $((KERNELS + NEW + r))) > "$W/b-job-$r.json"
  (set -a; . "$GITHUB_ENV"; kcache save --isolate --json) > "$W/b-save-$r.json" 2> "$W/b-save-$r.log"
  unset GITHUB_ENV
  echo "round $r done"
done

python3 - "$W" "$ROUNDS" "$OUT/persistent.json" <<'PY'
import json, subprocess, sys
w, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda f: json.load(open(f"{w}/{f}"))
before = open(f"{w}/before.txt").read().split()
machine = subprocess.run("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader", shell=True, capture_output=True, text=True).stdout.strip()
try:
    import torch, triton
except ImportError:
    torch = triton = type("none", (), {"__version__": None})
a_restore, a_job, a_new, a_save = load("a-restore.json"), load("a-job.json"), load("a-job-new.json"), load("a-save.json")
result = {
    "machine": machine, "torch": torch.__version__, "triton": triton.__version__,
    "cold": load("cold.json") | {"compiledFolders": len(load("cold.json")["compiledFolders"])},
    "entriesBefore": len(before),
    "miss": {
        "restore": {k: a_restore[k] for k in ("matchedKey", "entriesBefore", "entriesLocal", "entriesRestored")},
        "job": {"compiled": a_job["compiled"], "loaded": a_job["loaded"], "seconds": a_job["seconds"],
                 "compiledBefore": len(set(a_job["compiledFolders"]) & set(before))},
        "jobNew": {"compiled": a_new["compiled"], "loaded": a_new["loaded"],
                    "compiledBefore": len(set(a_new["compiledFolders"]) & set(before))},
        "save": {"outcome": a_save["outcome"], "entriesNew": a_save["entriesNew"],
                  "leftOutUnverified": a_save["leftOut"]["unverified"]["entries"]},
    },
    "rounds": [],
}
for r in range(1, rounds + 1):
    plain, restore, job, save = load(f"b-plain-{r}.json"), load(f"b-restore-{r}.json"), load(f"b-job-{r}.json"), load(f"b-save-{r}.json")
    shared, folder = restore["caches"][0]["shared"], save["folders"][0]
    result["rounds"].append({
        "round": r, "plainJobSeconds": plain["seconds"], "plainCompiled": plain["compiled"],
        "restoreSeconds": restore["seconds"], "buildSeconds": shared["seconds"], "sharedEntries": shared["entries"],
        "linked": shared["linked"], "copied": shared["copied"],
        "jobSeconds": job["seconds"], "jobCompiled": job["compiled"], "jobLoaded": job["loaded"],
        "saveSeconds": save["seconds"], "mergeSeconds": folder["merged"]["seconds"],
        "merged": folder["merged"]["merged"], "mergedSame": folder["merged"]["same"], "discarded": folder["discarded"],
    })
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result["miss"]))
for row in result["rounds"]:
    print(json.dumps(row))
PY
