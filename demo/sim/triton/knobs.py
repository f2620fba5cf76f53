"""The part of triton.knobs that kcache's telemetry hook uses (Triton >= 3.4)."""
import os


class _Compilation:
    def __init__(self):
        # Called for every kernel load with src, metadata, metadata_group, times, cache_hit.
        self.listener = None
        self.always_compile = os.environ.get("TRITON_ALWAYS_COMPILE", "0") == "1"


class _Cache:
    @property
    def dir(self):
        return os.environ.get("TRITON_CACHE_DIR") or os.path.join(
            os.environ.get("TRITON_HOME") or os.path.expanduser("~"), ".triton", "cache"
        )


compilation = _Compilation()
cache = _Cache()
