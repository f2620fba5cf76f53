"""compile() as Triton 3.6 does it on disk: look the kernel up through its group file; on a miss,
"compile" (sleep for the configured time), write every stage file through put() and the group
file last; report each load to knobs.compilation.listener (where the line has knobs). COUNTS is the
simulator's own ground truth, which a workload prints to check kcache's telemetry against."""
import hashlib
import json
import os
import random
import time

from . import BACKEND, HAS_KNOBS, __version__
from .runtime.cache import get_cache_manager

if HAS_KNOBS:
    from . import knobs

COMPILE_SECONDS = float(os.environ.get("TRITON_SIM_COMPILE_MS", "150")) / 1000.0
if BACKEND == "ascend":
    # Triton-Ascend: MLIR through triton-adapter and bishengir to an NPU binary.
    _STAGE_BYTES = {"source": 1500, "ttir": 6000, "ttadapter": 14000, "mlirbc": 20000, "bcmlir": 22000,
                    "npubin": 40000}
    TARGET = {"backend": "npu", "arch": "Ascend910B3", "warp_size": 0}
else:
    _STAGE_BYTES = {"source": 1500, "ttir": 6000, "ttgir": 12000, "llir": 40000, "ptx": 60000, "cubin": 30000}
    TARGET = {"backend": "cuda", "arch": 90, "warp_size": 32}
STAGES = tuple(_STAGE_BYTES)
BINARY_STAGES = ("cubin", "npubin", "mlirbc")
COUNTS = {"compiled": 0, "loaded": 0}


class CompiledKernel:
    def __init__(self, name, metadata_group):
        self.name = name
        self.metadata_group = metadata_group


def _stage_text(name, stage, rnd):
    lines = [f"// {stage} for {name}"]
    n = 0
    while n < _STAGE_BYTES[stage]:
        line = f"  %{rnd.randint(0, 999)} = {rnd.choice(['add', 'mul', 'fma', 'ld.global', 'st.shared'])} i32 %{rnd.randint(0, 999)}, {rnd.randint(0, 1 << 16)}"
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)


def compile(name, src, options):
    start = time.time()
    key = hashlib.sha256(f"{__version__}-{src}-{sorted(options.items())}".encode()).hexdigest()
    fn_cache_manager = get_cache_manager(key)
    file_name = name[:150]
    metadata_filename = f"{file_name}.json"
    metadata_group = fn_cache_manager.get_group(metadata_filename) or {}
    metadata_path = metadata_group.get(metadata_filename)
    listener = knobs.compilation.listener if HAS_KNOBS else None
    always = knobs.compilation.always_compile if HAS_KNOBS else os.environ.get("TRITON_ALWAYS_COMPILE") == "1"
    if not always and metadata_path is not None:
        with open(metadata_path) as f:
            metadata = json.load(f)
        COUNTS["loaded"] += 1
        if listener:
            listener(src=src, metadata=metadata, metadata_group=metadata_group,
                     times={"total": time.time() - start}, cache_hit=True)
        return CompiledKernel(name, metadata_group)
    time.sleep(COMPILE_SECONDS)
    COUNTS["compiled"] += 1
    rnd = random.Random(key)
    metadata = {"name": name, "hash": key, "target": TARGET, **options}
    for stage in STAGES:
        data = _stage_text(name, stage, rnd)
        fname = f"{file_name}.{stage}"
        metadata_group[fname] = fn_cache_manager.put(data.encode() if stage in BINARY_STAGES else data, fname)
    metadata_group[metadata_filename] = fn_cache_manager.put(json.dumps(metadata), metadata_filename, binary=False)
    fn_cache_manager.put_group(metadata_filename, metadata_group)
    if listener:
        listener(src=src, metadata=metadata, metadata_group=metadata_group,
                 times={"total": time.time() - start}, cache_hit=False)
    return CompiledKernel(name, metadata_group)


def build_launcher(name, signature):
    """The C launcher Triton builds once per signature: a single-file entry found by name."""
    key = hashlib.sha256(f"{__version__}-launcher-{signature}".encode()).hexdigest()
    cache = get_cache_manager(key)
    so_name = f"{name}.cpython-312-x86_64-linux-gnu.so"
    path = cache.get_file(so_name)
    if path is None:
        time.sleep(COMPILE_SECONDS)
        path = cache.put(bytes(random.Random(key).getrandbits(8) for _ in range(20000)), so_name)
    return path
