"""Triton-Ascend's single-file cache entries, as python/triton/backends/ascend/{driver,utils}.py write
them: npu_utils.so (keyed by the md5 of npu_utils.cpp), the precompiled header pair precompiled.h and
precompiled.h.gch (keyed by the header, the C++ compiler, Python, ASCEND_HOME_PATH and torch's
versions; built under `<TRITON_CACHE_DIR>/<hash>.lock`), and one launcher_cxx11abi<0|1><EXT_SUFFIX> per
launcher source.

The .gch is what clang makes of `-x c++-header`: it records every input file with its mtime and size,
and clang refuses a precompiled header whose inputs changed ("fatal error: file '...' has been
modified since the precompiled header '...' was built"). Triton-Ascend checks only that the .gch
exists, so a stale one is never rebuilt: every launcher build fails until someone deletes it.
"""
import fcntl
import hashlib
import json
import os
import random
import sys
import sysconfig
import time

from ...compiler import COMPILE_SECONDS
from ...runtime.cache import get_cache_manager

NPU_UTILS_SRC = "// npu_utils.cpp: device properties and kernel binary loading (simulated)\n"
HEADER_SRC = "#include <ATen/ATen.h>\n#include <torch_npu/csrc/core/npu/NPUWorkspaceAllocator.h>\n#include \"acl/acl.h\"\n"
PRECOMPILE_SECONDS = COMPILE_SECONDS * 2


def _ascend_path():
    path = os.environ.get("ASCEND_HOME_PATH", "")
    if not path:
        raise EnvironmentError("ASCEND_HOME_PATH is not set, source <ascend-toolkit>/set_env.sh first")
    return path


def _headers():
    """The headers a precompiled header includes: here, the toolkit's include folder."""
    root = os.path.join(_ascend_path(), "include")
    found = []
    for dirpath, _, files in os.walk(root):
        found += [os.path.join(dirpath, f) for f in files if f.endswith(".h")]
    return sorted(found)


def _stamp(path):
    st = os.stat(path)
    return [st.st_mtime_ns, st.st_size]


def npu_utils():
    key = hashlib.md5(NPU_UTILS_SRC.encode()).hexdigest()
    cache = get_cache_manager(key)
    path = cache.get_file("npu_utils.so")
    if path is None:
        time.sleep(COMPILE_SECONDS)
        path = cache.put(bytes(random.Random(key).getrandbits(8) for _ in range(30000)), "npu_utils.so")
    return path


def _precompile_hash():
    cxx = os.environ.get("CC") or "/usr/bin/clang++"
    parts = [HEADER_SRC, cxx, sys.version, _ascend_path(), "torch-git-sim", "torch-npu-git-sim"]
    return hashlib.sha256("_".join(parts).encode()).hexdigest()


def _precompile(header_path, gch_path):
    time.sleep(PRECOMPILE_SECONDS)
    inputs = {p: _stamp(p) for p in [header_path, *_headers()]}
    with open(gch_path, "w") as f:
        json.dump({"pch": "simulated clang precompiled header", "inputs": inputs}, f)


def _precompiled_header():
    """_precompile_npu_ext_with_lock: reuse the pair when both files exist, else build it under a lock."""
    h = _precompile_hash()
    cache = get_cache_manager(h)
    header, gch = cache.get_file("precompiled.h"), cache.get_file("precompiled.h.gch")
    if header is not None and gch is not None:
        return header
    lock_path = os.path.join(os.environ.get("TRITON_CACHE_DIR", "").strip(), f"{h}.lock")
    with open(lock_path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            header, gch = cache.get_file("precompiled.h"), cache.get_file("precompiled.h.gch")
            if header is not None and gch is not None:
                return header
            header = cache.put(HEADER_SRC, "precompiled.h", binary=False)
            _precompile(header, os.path.join(os.path.dirname(header), "precompiled.h.gch"))
            return header
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _check_pch(header_path):
    """What clang does with `-include precompiled.h` when precompiled.h.gch sits beside it."""
    gch = header_path + ".gch"
    with open(gch) as f:
        inputs = json.load(f)["inputs"]
    for path, stamp in inputs.items():
        if not os.path.exists(path):
            raise RuntimeError(f"fatal error: file '{path}' from the precompiled header '{gch}' was not found")
        if _stamp(path) != stamp:
            raise RuntimeError(
                f"fatal error: file '{path}' has been modified since the precompiled header '{gch}' was built: mtime changed"
            )


def make_launcher(signature):
    """make_npu_launcher_stub: the precompiled header first, then the launcher .so by its source's hash."""
    header = _precompiled_header()
    wrapper_src = f"// launcher for {signature}\n"
    cache = get_cache_manager(hashlib.sha256(wrapper_src.encode()).hexdigest())
    abi = os.environ.get("TRITON_SIM_CXX11_ABI", "1")
    so_name = f"launcher_cxx11abi{abi}{sysconfig.get_config_var('EXT_SUFFIX')}"
    path = cache.get_file(so_name)
    if path is not None:
        return path
    _check_pch(header)
    time.sleep(COMPILE_SECONDS)
    return cache.put(bytes(random.Random(signature).getrandbits(8) for _ in range(25000)), so_name)
