"""The part of triton.knobs that kcache's telemetry hook uses (Triton >= 3.4)."""
import os

from . import HAS_KNOBS, LINE

if not HAS_KNOBS:
    # Triton 3.2 (and Triton-Ascend's 3.2 line) has no triton.knobs module.
    raise ImportError(f"No module named 'triton.knobs' (simulated Triton line {LINE})")


class _Compilation:
    def __init__(self):
        # Called for every kernel load with src, metadata, metadata_group, times, cache_hit.
        self.listener = None
        self.always_compile = os.environ.get("TRITON_ALWAYS_COMPILE", "0") == "1"


class _Cache:
    @property
    def dir(self):
        from .runtime.cache import default_cache_dir

        return default_cache_dir()


compilation = _Compilation()
cache = _Cache()


def get_cache_invalidating_env_vars():
    """The variables Triton's cache key reads (TRITON_SIM_CODEGEN stands for them here)."""
    return {k: os.environ[k] for k in ("TRITON_SIM_CODEGEN",) if os.environ.get(k)}
