"""A benchmark-shaped job on the simulated Triton: plain kernels, autotuned kernels and launchers.
Prints one JSON line: kernels compiled and loaded (from knobs.compilation.listener) and seconds."""
import json
import sys
import time

import triton
from triton import knobs
from triton.autotuner import autotune
from triton.compiler import build_launcher, compile as compile_kernel

import os

PLAIN = int(sys.argv[1]) if len(sys.argv) > 1 else 8
AUTOTUNED = int(sys.argv[2]) if len(sys.argv) > 2 else 4
# --json FILE: write benchmark-shaped results ({"results": [{op, mode, median_ms}]}), as a kernel
# library's benchmark would. TRITON_SIM_SLOW_WHEN_WARM=<op> makes that op 50% slower in a run that
# compiled nothing (to exercise timing-change flags; real caches do not do this).
RESULTS = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
CONFIGS = [{"BLOCK": b, "num_warps": w} for b, w in ((64, 4), (128, 4), (128, 8), (256, 8))]

counts = {"compiled": 0, "loaded": 0}
previous = knobs.compilation.listener


def count(*, src, metadata, metadata_group, times, cache_hit):
    counts["loaded" if cache_hit else "compiled"] += 1
    if previous:
        previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)


knobs.compilation.listener = count
start = time.time()
build_launcher("cuda_utils", "driver")
for i in range(PLAIN):
    build_launcher("__triton_launcher", f"sig{i % 3}")
    compile_kernel(f"chunk_fwd_kernel_{i}", f"def chunk_fwd_kernel_{i}(x): pass", {"num_warps": 4, "num_stages": 2})
for i in range(AUTOTUNED):
    autotune(f"chunk_bwd_kernel_{i}", f"def chunk_bwd_kernel_{i}(x): pass", CONFIGS, ("T", 4096))
if RESULTS:
    slow = os.environ.get("TRITON_SIM_SLOW_WHEN_WARM")
    rows = [{"op": f"chunk_fwd_{i}", "mode": "fwd", "median_ms": 1.0 + 0.1 * i} for i in range(PLAIN)]
    rows += [{"op": f"chunk_bwd_{i}", "mode": "fwdbwd", "median_ms": 2.0 + 0.1 * i} for i in range(AUTOTUNED)]
    for r in rows:
        if r["op"] == slow and counts["compiled"] == 0:
            r["median_ms"] *= 1.5
    with open(RESULTS, "w") as f:
        json.dump({"results": rows}, f)
print(json.dumps({**counts, "seconds": round(time.time() - start, 3), "triton": triton.__version__}))
