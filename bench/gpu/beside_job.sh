#!/usr/bin/env bash
# One job's work in bench/gpu/beside-on-device.sh: persistent_job.py for each KERNELS:OFFSET pair in
# $PAIRS, in order, each one's JSON line kept in $JOB_OUT/job-<kernels>-<offset>.out.
set -euo pipefail
for pair in $PAIRS; do
  python3 "$REPO/bench/gpu/persistent_job.py" "${pair%%:*}" "${pair##*:}" > "$JOB_OUT/job-${pair%%:*}-${pair##*:}.out"
done
