"""Triton's Autotuner disk cache (python/triton/runtime/autotuner.py, Triton >= 3.4, cache_results=True):
check_disk_cache looks `<fn>.autotune.json` up in a key folder that hashes the kernel's source, its
configs and the tuning key; a hit skips benchmarking, a miss benchmarks every config and writes it."""
import hashlib
import json
import time

from .. import __version__
from .cache import get_cache_manager


class Autotuner:
    def __init__(self, fn, src, configs):
        self.base_fn = fn
        self.src = src
        self.configs = configs

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        cache_key = hashlib.sha256(f"{__version__}-{self.src}-{configs}-{tuning_key}".encode()).hexdigest()
        cache = get_cache_manager(cache_key)
        file_name = f"{self.base_fn.__name__[:150]}.autotune.json"
        path = cache.get_file(file_name)
        if path:
            with open(path) as f:
                self.timings = json.load(f)["configs_timings"]
            return True
        self.timings = bench_fn()
        cache.put(json.dumps({"key": list(tuning_key), "configs_timings": self.timings}), file_name, binary=False)
        return False
