"""A Triton job whose kernels change with the revision, for proving working-set caches on a GPU.

Twelve kernels (one @triton.jit function specialised on a constexpr per kernel, so each is its own
cache entry). At revision 0 every kernel is at version 0; from revision 1 on, kernels 0-3 are at
version 1 (an edit to four kernels: their old entries die). Every kernel runs and is checked
against torch. Usage: python3 working_set.py REVISION
"""
import json
import sys

import torch
import triton
import triton.language as tl

KERNELS = 12
CHANGED = range(4)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, V: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * (V % 7 + 1) + V, mask=mask)


def main():
    revision = int(sys.argv[1])
    x = torch.randn(1 << 16, device="cuda")
    used = []
    for i in range(KERNELS):
        version = 1 if revision >= 1 and i in CHANGED else 0
        v = i * 100 + version
        out = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), V=v, BLOCK=1024)
        torch.testing.assert_close(out, x * (v % 7 + 1) + v)
        used.append(v)
    torch.cuda.synchronize()
    print(json.dumps({"revision": revision, "kernels": used}))


main()
