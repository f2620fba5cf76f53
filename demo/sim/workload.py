"""A benchmark-shaped job on the simulated Triton: plain kernels, autotuned kernels and launchers.
Prints one JSON line: kernels compiled and loaded (the simulator's own count, not kcache's) and
seconds. With TRITON_SIM_BACKEND=ascend it is a Triton-Ascend job (npu_utils, precompiled header and
launchers); it needs ASCEND_HOME_PATH, as Triton-Ascend does, so source the toolkit's set_env.sh."""
import json
import os
import sys
import time

import triton
from triton.autotuner import autotune
from triton.compiler import COUNTS, build_launcher, compile as compile_kernel

PLAIN = int(sys.argv[1]) if len(sys.argv) > 1 else 8
AUTOTUNED = int(sys.argv[2]) if len(sys.argv) > 2 else 4
# --json FILE: write benchmark-shaped results ({"results": [{op, mode, median_ms}]}), as a kernel
# library's benchmark would. TRITON_SIM_SLOW_WHEN_WARM=<op> makes that op 50% slower in a run that
# compiled nothing (to exercise timing-change flags; real caches do not do this).
RESULTS = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
# --prefix NAME: kernel names start with NAME (two workloads that compile different kernels).
PREFIX = sys.argv[sys.argv.index("--prefix") + 1] if "--prefix" in sys.argv else "chunk"
CONFIGS = [{"BLOCK": b, "num_warps": w} for b, w in ((64, 4), (128, 4), (128, 8), (256, 8))]

if triton.HAS_KNOBS:
    # A job listener of its own, as libraries install: kcache's hook must keep calling it.
    from triton import knobs

    seen = {"calls": 0}
    previous = knobs.compilation.listener

    def count(*, src, metadata, metadata_group, times, cache_hit):
        seen["calls"] += 1
        if previous:
            previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)

    knobs.compilation.listener = count

start = time.time()
if triton.BACKEND == "ascend":
    from triton.backends.ascend.driver import make_launcher, npu_utils

    npu_utils()
    launcher = make_launcher
else:
    build_launcher("cuda_utils", "driver")

    def launcher(sig):
        return build_launcher("__triton_launcher", sig)

for i in range(PLAIN):
    launcher(f"sig{i % 3}")
    compile_kernel(f"{PREFIX}_fwd_kernel_{i}", f"def {PREFIX}_fwd_kernel_{i}(x): pass", {"num_warps": 4, "num_stages": 2})
for i in range(AUTOTUNED):
    autotune(f"{PREFIX}_bwd_kernel_{i}", f"def {PREFIX}_bwd_kernel_{i}(x): pass", CONFIGS, ("T", 4096))
if RESULTS:
    slow = os.environ.get("TRITON_SIM_SLOW_WHEN_WARM")
    rows = [{"op": f"{PREFIX}_fwd_{i}", "mode": "fwd", "median_ms": 1.0 + 0.1 * i} for i in range(PLAIN)]
    rows += [{"op": f"{PREFIX}_bwd_{i}", "mode": "fwdbwd", "median_ms": 2.0 + 0.1 * i} for i in range(AUTOTUNED)]
    for r in rows:
        if r["op"] == slow and COUNTS["compiled"] == 0:
            r["median_ms"] *= 1.5
    with open(RESULTS, "w") as f:
        json.dump({"results": rows}, f)
from triton.runtime.cache import WRITTEN  # noqa: E402

print(json.dumps({**COUNTS, "seconds": round(time.time() - start, 3), "triton": triton.__version__,
                  "written": sorted(WRITTEN)}))
