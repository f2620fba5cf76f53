"""One worker of the two-GPU matrix proof (bench/gpu/matrix-on-device.sh): it must see exactly one
GPU (kcache's device group pins it), compiles kernels of its own (their source names the worker, so
the two workers compile different kernels), autotunes them, times them and checks them against torch.

Writes --json: {"worker", "visible", "device_count", "uuid", "results": [{op, N, median_ms}], "max_err"}.
FAIL_WORKER=<name> makes that worker exit 1 after its kernels ran (a failing test in the matrix).
"""
import argparse
import inspect
import json
import os
import sys

import torch
import triton
import triton.language as tl

p = argparse.ArgumentParser()
p.add_argument("--name", required=True)
p.add_argument("--json", required=True)
args = p.parse_args()
CACHE_RESULTS = {"cache_results": True} if "cache_results" in inspect.signature(triton.autotune).parameters else {}
SCALE = {"a": 2.0, "b": 3.0}[args.name]

# Each worker's kernel body differs (its scale is a literal in the source), so Triton keys them apart.
src = f'''
@triton.autotune(configs=[triton.Config({{"BLOCK": b}}, num_warps=w) for b, w in ((256, 2), (1024, 4), (4096, 8))],
                 key=["n"], **CACHE_RESULTS)
@triton.jit
def scale_add_{args.name}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, {SCALE} * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
'''
path = os.path.join(os.path.dirname(os.path.abspath(args.json)), f"kernels_{args.name}.py")
with open(path, "w") as f:
    f.write("import triton\nimport triton.language as tl\nCACHE_RESULTS = " + repr(CACHE_RESULTS) + "\n" + src)
sys.path.insert(0, os.path.dirname(path))
kernel = getattr(__import__(f"kernels_{args.name}"), f"scale_add_{args.name}")

count = torch.cuda.device_count()
props = torch.cuda.get_device_properties(0)
results, max_err = [], 0.0
for n in (1 << 16, 1 << 20, 1 << 24):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    kernel[grid](x, y, out, n)
    max_err = max(max_err, (out - (SCALE * x + y)).abs().max().item())
    ms = triton.testing.do_bench(lambda: kernel[grid](x, y, out, n), quantiles=[0.5])
    results.append({"op": f"scale_add_{args.name}", "N": n, "median_ms": ms if isinstance(ms, float) else ms[0]})
with open(args.json, "w") as f:
    json.dump({"worker": args.name, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "device_count": count,
               "uuid": str(getattr(props, "uuid", props.name)), "results": results, "max_err": max_err}, f)
print(json.dumps({"worker": args.name, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "devices": count}))
if os.environ.get("FAIL_WORKER") == args.name:
    print(f"worker {args.name}: failing as asked (FAIL_WORKER)", file=sys.stderr)
    sys.exit(1)
