"""The autotuner's disk cache (Triton >= 3.4, cache_results=True): `<fn>.autotune.json` holds the
timings of every config; a hit skips benchmarking and compiles only the best config."""
import hashlib
import json
import time

from . import __version__
from .compiler import compile as compile_kernel
from .runtime.cache import get_cache_manager


def autotune(name, src, configs, key_args):
    cache_key = hashlib.sha256(f"{__version__}-{src}-{configs}-{key_args}".encode()).hexdigest()
    cache = get_cache_manager(cache_key)
    file_name = f"{name[:150]}.autotune.json"
    path = cache.get_file(file_name)
    if path:
        with open(path) as f:
            timings = json.load(f)["configs_timings"]
    else:
        timings = []
        for cfg in configs:
            compile_kernel(name, src, cfg)
            time.sleep(0.01)  # benchmarking the config
            timings.append([cfg, 1.0 + 0.1 * len(timings)])
        cache.put(json.dumps({"key": list(key_args), "configs_timings": timings}), file_name, binary=False)
    best = min(timings, key=lambda t: t[1])[0]
    return compile_kernel(name, src, best)
