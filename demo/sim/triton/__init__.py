"""A simulation of Triton's on-disk compile cache, for kcache's demo and tests.

It is NOT Triton: it compiles nothing. It reproduces what Triton 3.6 leaves on disk and how it
looks entries up (triton/runtime/cache.py FileCacheManager, triton/compiler/compiler.py compile,
triton/runtime/autotuner.py's disk cache), so that a cache kcache restores behaves as it would for
real Triton: a kernel loads only when its group file's child paths exist.
"""

__version__ = "3.6.0+kcache.sim"

from . import knobs  # noqa: E402,F401
