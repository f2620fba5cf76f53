"""bench/results/gpu-fla-probe.json from the log bench/gpu/fla-probe-on-device.sh wrote: per job, the
seconds each side's run.py took (from the time stamps: the "Running: ... run.py" line to the script's next
line), and whether the side finished before the probe's limit cut it.
A side the limit cut ran to its job's end; the last job's end is the probe's whole wall time (the
third argument: the device tool's wall_s, as `timeout` ended the probe before it wrote that job's row).
A line stamped earlier than the open side's start is a late stderr line of the job before: skipped.
Usage: python3 bench/gpu/fla-probe-rows.py LOG ROWS.jsonl PROBE_WALL > JSON"""
import json
import re
import sys

STAMP = re.compile(r"^\[\s*([\d.]+)\] (.*)$")
jobs, job, side = [], None, None
for line in open(sys.argv[1]):
    if line.startswith("== "):
        side = None
        op, what = line[3:].strip().split(": ")
        job = {"op": op, "job": what, "sides": []}
        jobs.append(job)
        continue
    m = STAMP.match(line.rstrip("\n"))
    if not m or job is None:
        continue
    t, text = float(m.group(1)), m.group(2)
    if side is not None and t < side["start"]:
        continue
    if side is not None and text.strip():
        side["seconds"], side["finished"] = round(t - side.pop("start"), 1), True
        side = None
    if "Running: " in text and "run.py" in text:
        side = {"side": "HEAD" if text.rstrip().endswith("head.json") else "BASE", "start": t}
        job["sides"].append(side)
totals = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
probe_wall = float(sys.argv[3])
for job in jobs:
    total = next((r for r in totals if r["label"] == f"{job['op']} {job['job']}"), None)
    if total:
        job["wall"], job["exit"] = total["wall"], total["exit"]
    else:
        job["wall"], job["exit"] = round(probe_wall - sum(r["wall"] for r in totals), 1), 124
    for s in job["sides"]:
        if "start" in s:  # cut by the probe's limit: it ran from its start to the job's end
            s["seconds"], s["finished"] = round((job["wall"] or 0) - s.pop("start"), 1), False
steps = {r["label"]: r for r in totals if r["label"] in ("pip-install", "import")}
json.dump({"machine": "NVIDIA H200", "steps": steps, "jobs": jobs}, sys.stdout, indent=1)
print()
