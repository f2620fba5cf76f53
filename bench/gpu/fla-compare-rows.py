"""Rows of bench/results/gpu-fla-compare.json from the log bench/gpu/fla-compare-on-device.sh wrote
(the run stopped at its time limit before writing its own JSON: the log has every figure). Each job
ends with a line "<label> (<what>): exit <code> in <seconds> s"; the comparison table the script
printed, and for kcache's jobs the run's kernel and autotune lines, come before it.
Usage: python3 bench/gpu/fla-compare-rows.py LOG > JSON"""
import json
import re
import sys

END = re.compile(r"^(\S+) \((.+)\): exit (\d+) in ([\d.]+) s$")
ROW = re.compile(r"^\s+(\S+)\s+(fwd|fwdbwd)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s+([+-]?)\s*([\d.]+)%")
KERNELS = re.compile(r"(\d+) kernels loaded from cache, (\d+) compiled")
AUTOTUNE = re.compile(r"^- (?:compare|tune): (\d+) kernels on given winners(?: \((.*?)\))?, (\d+) tuned here")

rows, table, extra = [], [], {}
for line in open(sys.argv[1]):
    m = ROW.match(line)
    if m:
        op, mode, b, t, h, d, base, head, _, sign, change = m.groups()
        table.append({"record": f"{op} {mode} {b}x{t}x{h}x{d}", "base_ms": float(base), "head_ms": float(head),
                      "change_pct": float(change) * (-1 if sign == "-" else 1) if sign else float(change)})
        continue
    if (k := KERNELS.search(line)) and line.startswith("key "):
        extra["loaded"], extra["compiled"] = int(k.group(1)), int(k.group(2))
    if a := AUTOTUNE.match(line):
        extra["given"], extra["givenFrom"], extra["tuned"] = int(a.group(1)), a.group(2), int(a.group(3))
    if e := END.match(line.strip()):
        label, what, code, wall = e.groups()
        kind = "clearing" if "clearing" in what else "kcache"
        if label == "prewarm":
            kind = "prewarm"
        rows.append({"label": label, "kind": kind, "exit": int(code), "wall": float(wall), "records": table,
                     "flags": sum(1 for r in table if abs(r["change_pct"]) > 5.0), **extra})
        table, extra = [], {}
json.dump({"source": "bench/results/gpu-fla-compare.log", "rows": rows}, sys.stdout, indent=1)
