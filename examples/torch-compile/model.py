"""A torch.compile workload: a two-block fp16 MLP compiled with mode="max-autotune-no-cudagraphs"
(Inductor generates Triton kernels and autotunes its matmuls), its first call timed and its output
checked against eager PyTorch. kcache's example job (kcache.yml beside it) and its GPU proof
(bench/gpu/inductor-on-device.sh) run it. Prints one JSON line: first-call seconds, torch's own
cache counters (FX graph cache, AOTAutograd cache) and the output's checksum; --json FILE writes
{"results": [{"model", "first_call_s", "checksum"}]} for kcache's checks.
Usage: python3 model.py [--json FILE] [--mega-save FILE] [--mega-load FILE]
  --mega-save FILE: after the first call, PyTorch's Mega-Cache (torch.compiler.save_cache_artifacts)
  --mega-load FILE: before compiling, torch.compiler.load_cache_artifacts of such a file (timed apart)
"""
import json
import sys
import time

import torch
from torch._dynamo.utils import counters


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def arg(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def main():
    load_s = None
    if arg("--mega-load"):
        t0 = time.perf_counter()
        with open(arg("--mega-load"), "rb") as f:
            torch.compiler.load_cache_artifacts(f.read())
        load_s = time.perf_counter() - t0
    torch.manual_seed(0)
    d = 512
    model = torch.nn.Sequential(Block(d), Block(d)).cuda().half()
    x = torch.randn(256, d, device="cuda", dtype=torch.half)
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        out = compiled(x)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    with torch.no_grad():
        ref = model(x)
    torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2)
    if arg("--mega-save"):
        artifacts = torch.compiler.save_cache_artifacts()
        if artifacts is not None:
            with open(arg("--mega-save"), "wb") as f:
                f.write(artifacts[0])
    result = {
        "first_call_s": first,
        "mega_load_s": load_s,
        "fxgraph": {k: v for k, v in counters["inductor"].items() if k.startswith("fxgraph")},
        "aotautograd": {k: v for k, v in counters["aot_autograd"].items() if "autograd_cache" in k},
        "inductor": dict(counters["inductor"]),
        "checksum": float(out.float().sum()),
    }
    line = json.dumps(result)
    print(line)
    if arg("--json"):
        with open(arg("--json"), "w") as f:
            json.dump({"results": [{"model": "mlp-2x512", "first_call_s": first, "checksum": result["checksum"]}]}, f)


main()
