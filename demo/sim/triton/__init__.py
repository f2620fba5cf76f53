"""A simulation of Triton's on-disk compile cache, for kcache's demo and tests.

It is NOT Triton: it compiles nothing. It reproduces what Triton 3.6 leaves on disk and how it
looks entries up (triton/runtime/cache.py FileCacheManager, triton/compiler/compiler.py compile,
triton/runtime/autotuner.py's disk cache), so that a cache kcache restores behaves as it would for
real Triton: a kernel loads only when its group file's child paths exist.

TRITON_SIM_BACKEND=ascend makes it Triton-Ascend instead (triton/backends/ascend): NPU stage files,
npu_utils.so, launcher_cxx11abi*.so and the precompiled header pair. TRITON_SIM_LINE picks the release
line: "3.2" has no triton.knobs (so no compilation listener) and names entries in urlsafe base64 as
Triton 3.2 did; "3.5" (Triton-Ascend's main line) and the default have both as Triton >= 3.4 does.
"""
import os

BACKEND = os.environ.get("TRITON_SIM_BACKEND", "cuda")
LINE = os.environ.get("TRITON_SIM_LINE", "3.5" if BACKEND == "ascend" else "3.6")
HAS_KNOBS = tuple(int(p) for p in LINE.split(".")[:2]) >= (3, 4)

__version__ = f"{LINE}.0+kcache.sim" + (".ascend" if BACKEND == "ascend" else "")

if HAS_KNOBS:
    from . import knobs  # noqa: E402,F401

from .compiler import compile  # noqa: E402,F401
from .runtime.jit import autotune, jit  # noqa: E402,F401
