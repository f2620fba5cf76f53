"""A Triton job for proving kcache on a persistent runner's cache folder (bench/gpu/persistent-on-device.sh).

KERNELS kernels (one @triton.jit function specialised on a constexpr, so each is its own cache
entry), each run and checked against torch. Triton's compilation listener counts, per kernel load,
whether it came from the cache or was compiled, and the entry folders it compiled into. Prints one
JSON line: compiled, loaded, the compiled entry folders, and the job's wall time.
Usage: python3 persistent_job.py KERNELS [PREFIX_OFFSET]
"""
import json
import os
import sys
import time

start = time.time()
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton import knobs  # noqa: E402

counts = {"compiled": 0, "loaded": 0, "compiledFolders": []}


def listener(*, src, metadata, metadata_group, times, cache_hit):
    counts["loaded" if cache_hit else "compiled"] += 1
    if not cache_hit:
        paths = list(metadata_group.values())
        if paths:
            counts["compiledFolders"].append(os.path.basename(os.path.dirname(paths[0])))


knobs.compilation.listener = listener


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, V: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * (V % 7 + 1) + V
    for _ in tl.static_range(V % 5):
        y = y * 0.5 + x
    tl.store(out_ptr + offs, y, mask=mask)


def main():
    kernels = int(sys.argv[1])
    offset = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    x = torch.randn(1 << 16, device="cuda")
    for i in range(kernels):
        v = offset + i
        out = torch.empty_like(x)
        affine_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), V=v, BLOCK=1024)
        ref = x * (v % 7 + 1) + v
        for _ in range(v % 5):
            ref = ref * 0.5 + x
        torch.testing.assert_close(out, ref)
    torch.cuda.synchronize()
    print(json.dumps({**counts, "seconds": time.time() - start}))


main()
