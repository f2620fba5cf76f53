"""autotune() on the simulated Triton: the Autotuner's disk cache (triton/runtime/autotuner.py) in
front of the compiles; a hit skips benchmarking and compiles only the best config. `fn`, when given,
is the Python function the kernel is (its module is what a salt is made of); else one is made."""
import time
import types

from .compiler import compile as compile_kernel
from .runtime.autotuner import Autotuner


def _stub(name):
    return types.FunctionType(compile("def f(): pass", "<kernel>", "exec").co_consts[0], {}, name)


def autotune(name, src, configs, key_args, fn=None):
    tuner = Autotuner(fn or _stub(name), src, configs)

    def bench():
        timings = []
        for cfg in configs:
            compile_kernel(name, src, cfg)
            time.sleep(0.01)  # benchmarking the config
            timings.append([cfg, 1.0 + 0.1 * len(timings)])
        return timings

    tuner.check_disk_cache(key_args, configs, bench)
    best = min(tuner.timings, key=lambda t: t[1])[0]
    return compile_kernel(name, src, best)
