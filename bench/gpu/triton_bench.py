"""A small Triton benchmark for proving kcache on a real GPU: autotuned kernels, timed, checked.

Kernels: vector add (autotuned over BLOCK), row softmax (autotuned over num_warps), fp16 matmul
(autotuned over tile shapes) and layer norm (plain), each over a few shapes, so a cold run compiles
dozens of kernels and runs autotuning, and a warm run should compile none. Autotune results are
cached on disk (cache_results=True, Triton >= 3.4), so a warm run also skips benchmarking configs.

Writes --json results ({"results": [{op, mode, M, N, median_ms, p20_ms, p80_ms}]}) and, in
--out, out_<op>.npy / ref_<op>.npy (Triton output vs PyTorch reference) for kcache's checks.
"""
import argparse
import inspect
import json
import os
import time

import numpy as np
import torch
import triton
import triton.language as tl

CACHE_RESULTS = {"cache_results": True} if "cache_results" in inspect.signature(triton.autotune).parameters else {}


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (512, 4), (1024, 4), (2048, 8))],
    key=["n"],
    **CACHE_RESULTS,
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8)],
    key=["n_cols"],
    **CACHE_RESULTS,
)
@triton.jit
def softmax_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.autotune(
    configs=[
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 64, "BK": 32}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 64, "BK": 64}, num_stages=3, num_warps=4),
    ],
    key=["M", "N", "K"],
    **CACHE_RESULTS,
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak, mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn, mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    y = d / tl.sqrt(var + eps) * tl.load(w_ptr + cols, mask=mask) + tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, y, out, x.numel())
    return out


def softmax(x):
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda m: (triton.cdiv(M, m["BM"]), triton.cdiv(N, m["BN"]))  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return c


def layernorm(x, w, b):
    out = torch.empty_like(x)
    layernorm_kernel[(x.shape[0],)](x, w, b, out, x.stride(0), x.shape[1], 1e-5, BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def cases():
    g = torch.Generator(device="cuda").manual_seed(0)
    r = lambda *s, dt=torch.float32: torch.randn(*s, device="cuda", generator=g, dtype=dt)  # noqa: E731
    for n in (1 << 16, 1 << 20, 1 << 24):
        x, y = r(n), r(n)
        yield "add", (1, n), lambda x=x, y=y: add(x, y), lambda x=x, y=y: x + y
    for m, n in ((4096, 256), (4096, 1024), (1024, 4096)):
        x = r(m, n)
        yield "softmax", (m, n), lambda x=x: softmax(x), lambda x=x: torch.softmax(x, dim=1)
    for m, n, k in ((512, 512, 512), (1024, 1024, 1024), (2048, 2048, 1024)):
        a, b = r(m, k, dt=torch.float16), r(k, n, dt=torch.float16)
        yield "matmul", (m, n), lambda a=a, b=b: matmul(a, b), lambda a=a, b=b: (a.float() @ b.float()).half()
    for m, n in ((4096, 512), (4096, 2048)):
        x, w, b = r(m, n), r(n), r(n)
        yield "layernorm", (m, n), lambda x=x, w=w, b=b: layernorm(x, w, b), lambda x=x, w=w, b=b: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", required=True)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    results, saved = [], set()
    for op, (m, n), run, ref in cases():
        out = run()
        torch.cuda.synchronize()
        if op not in saved:
            np.save(os.path.join(args.out, f"out_{op}.npy"), out.float().cpu().numpy())
            np.save(os.path.join(args.out, f"ref_{op}.npy"), ref().float().cpu().numpy())
            saved.add(op)
        ms = triton.testing.do_bench(run, warmup=5, rep=20, quantiles=[0.5, 0.2, 0.8])
        results.append({"op": op, "mode": "fwd", "M": m, "N": n, "median_ms": ms[0], "p20_ms": ms[1], "p80_ms": ms[2]})
        print(f"{op:10s} M={m:<6} N={n:<9} median {ms[0]:.4f} ms", flush=True)
    with open(args.json, "w") as f:
        json.dump({"machine_info": {"device": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__},
                   "results": results, "seconds": time.time() - t0}, f, indent=1)


if __name__ == "__main__":
    main()
