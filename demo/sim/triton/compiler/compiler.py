"""compile() as Triton 3.6 does it on disk: look the kernel up through its group file; on a miss,
"compile" (sleep for the configured time), write every stage file through put() and the group
file last; report each load to knobs.compilation.listener (where the line has knobs). COUNTS is the
simulator's own ground truth, which a workload prints to check kcache's telemetry against.

Two ways in: the simulator's own `compile(name, src, options)` (its workloads name kernels by
strings), and Triton's `compile(ASTSource(fn, signature, constexprs, attrs), target, options)`, as
the simulated JIT (runtime/jit.py) and `kcache prewarm --cpu`'s workers call it: the key is made as
Triton makes it (get_cache_key: the source's hash over the function's cache_key, attributes,
signature and constants; the backend's; the options'; the cache-invalidating environment)."""
import hashlib
import json
import os
import random
import time

from .. import BACKEND, HAS_KNOBS, __version__
from ..backends.compiler import GPUTarget
from ..runtime.cache import get_cache_manager

if HAS_KNOBS:
    from .. import knobs

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


class _Metadata:
    def __init__(self, values):
        self.__dict__.update(values)

    def _asdict(self):
        return dict(self.__dict__)


class CompiledKernel:
    def __init__(self, name, metadata_group, metadata=None):
        self.name = name
        self.metadata_group = metadata_group
        meta = dict(metadata or {})
        self.hash = meta.get("hash")
        if isinstance(meta.get("target"), dict):
            t = meta["target"]
            meta["target"] = GPUTarget(t["backend"], t["arch"], t["warp_size"])
        self.metadata = _Metadata(meta)


class ASTSource:
    """Triton's ASTSource: a JIT function with its signature, constexprs and specialization attributes."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn = fn
        self.name = fn.__name__
        self.signature = signature
        self.constants = dict(constexprs or {})
        self.attrs = attrs or {}
        for k in self.signature:
            if not isinstance(k, str):
                raise TypeError("Signature keys must be string")

    def hash(self):
        sorted_sig = [v for k, v in sorted(self.signature.items())]
        get_key = lambda x: x.cache_key if hasattr(x, "cache_key") else str(x)  # noqa: E731
        constants_key = "-".join([get_key(v) for k, v in sorted(self.constants.items())])
        key = f"{self.fn.cache_key}-{str(self.attrs)}-{sorted_sig}-{constants_key}"
        return hashlib.sha256(key.encode("utf-8")).hexdigest()


class _Options:
    def __init__(self, values):
        self.__dict__.update(values)

    def hash(self):
        key = "_".join(f"{k}-{v}" for k, v in sorted(self.__dict__.items()))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()


class _Backend:
    def __init__(self, target):
        self.target = target

    def hash(self):
        return f"sim-ptxas-{self.target.arch}"

    def parse_options(self, opts):
        values = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False, "arch": f"sm{self.target.arch}"}
        values.update({k: v for k, v in dict(opts).items() if k != "arch"})
        return _Options(values)


def make_backend(target):
    return _Backend(target)


def get_cache_key(src, backend, backend_options, env_vars):
    return f"{__version__}-{src.hash()}-{backend.hash()}-{backend_options.hash()}-{str(sorted(env_vars.items()))}"


def _compile_ast(src, target, options, env_vars):
    if target is None:
        from ..runtime.driver import driver

        target = driver.active.get_current_target()
    backend = make_backend(target)
    opts = backend.parse_options(options or {})
    if env_vars is None:
        env_vars = knobs.get_cache_invalidating_env_vars() if HAS_KNOBS else {}
    key = hashlib.sha256(get_cache_key(src, backend, opts, env_vars).encode()).hexdigest()
    extra = {"target": {"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size},
             **opts.__dict__}
    return _compile_key(src.name, src, key, extra)


def _stage_text(name, stage, rnd):
    lines = [f"// {stage} for {name}"]
    n = 0
    while n < _STAGE_BYTES[stage]:
        line = f"  %{rnd.randint(0, 999)} = {rnd.choice(['add', 'mul', 'fma', 'ld.global', 'st.shared'])} i32 %{rnd.randint(0, 999)}, {rnd.randint(0, 1 << 16)}"
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)


def compile(src, target=None, options=None, _env_vars=None):
    """Triton's compile(ASTSource, target, options); the simulator's compile(name, src, options) when
    `src` is a kernel's name."""
    if not isinstance(src, str):
        return _compile_ast(src, target, options, _env_vars)
    name, src = src, target
    key = hashlib.sha256(f"{__version__}-{src}-{sorted(options.items())}".encode()).hexdigest()
    return _compile_key(name, src, key, {"target": TARGET, **options})


def _compile_key(name, src, key, extra):
    start = time.time()
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
        return CompiledKernel(name, metadata_group, metadata)
    time.sleep(COMPILE_SECONDS)
    COUNTS["compiled"] += 1
    rnd = random.Random(key)
    metadata = {"name": name, "hash": key, **extra}
    for stage in STAGES:
        data = _stage_text(name, stage, rnd)
        fname = f"{file_name}.{stage}"
        metadata_group[fname] = fn_cache_manager.put(data.encode() if stage in BINARY_STAGES else data, fname)
    metadata_group[metadata_filename] = fn_cache_manager.put(json.dumps(metadata), metadata_filename, binary=False)
    fn_cache_manager.put_group(metadata_filename, metadata_group)
    if listener:
        listener(src=src, metadata=metadata, metadata_group=metadata_group,
                 times={"total": time.time() - start}, cache_hit=False)
    return CompiledKernel(name, metadata_group, metadata)


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
