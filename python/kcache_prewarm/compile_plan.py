"""`kcache prewarm --cpu`'s compile worker (docs/cpu-prewarm.md): compiles, on a machine with no GPU,
the kernels of a compile plan whose JIT function changed, into TRITON_CACHE_DIR.

    python compile_plan.py WORK.json WORKER WORKERS RESULTS.jsonl

WORK.json: {"root": the checkout, "device": the GPU job's device facts or null, "entries": [...]}
(each entry as kcache's hook recorded it, its file relative to the root). Every worker checks every
entry (importing its module from the checkout and computing Triton's `cache_key` of its function, which
covers its source, the functions it calls and the constexpr globals it reads); the changed entries are
dealt round-robin, and this worker compiles those dealt to it, for the recorded target, with the
recorded options and environment. Worker 0 also reports the unchanged ones, each with whether this
machine computes the very key the GPU job had (the proof that what it compiles will load there).

One JSON line per entry appended to RESULTS.jsonl: {"i", "outcome": unchanged|compiled|cached|missing|failed, ...},
then {"done": true, "libcuda": ..., "cudaInitialized": ...}: whether this process ever mapped the CUDA
driver library (it must not: no CUDA context is made).

The library is shown the GPU job's device (device facts: name, capability, properties) instead of
none: kernel libraries read the device at import (FLA's IS_TF32_SUPPORTED, its configs by shared
memory), and a library that saw no GPU would define other kernels than the GPU job runs.
"""
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import time
import traceback


_OUT = {"file": None}


def emit(obj):
    line = json.dumps(obj) + "\n"
    if _OUT["file"] is None:
        sys.stdout.write(line)
        sys.stdout.flush()
        return
    with open(_OUT["file"], "a") as f:
        f.write(line)


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "tuple" in v:
        return tuple(decode(x) for x in v["tuple"])
    if "dict" in v:
        return {decode(k): decode(x) for k, x in v["dict"]}
    if "float" in v:
        return float(v["float"])
    if "dtype" in v:
        import triton.language as tl

        return tl.dtype(v["dtype"])
    if "constexpr" in v:
        import triton.language as tl

        return tl.constexpr(decode(v["constexpr"]))
    if "jit" in v:
        module, qualname = v["jit"].split(":", 1)
        return resolve(checkout_import(module, _ROOT["root"], loaded_ok=True), qualname)
    raise ValueError(f"unknown value form {sorted(v)}")


_ROOT = {"root": None}


def inside(path, root):
    path = os.path.realpath(path)
    return path == root or path.startswith(root + os.sep)


class NotCheckout(ImportError):
    """A module (or a package on its way) that is not a file of the checkout: never imported."""

    def __init__(self, name, where):
        super().__init__(f"{name} is not the checkout's own ({where}): not imported")
        self.where = where


def checkout_import(name, root, loaded_ok=False):
    """Imports module `name` only where each package and module on its way is a file of the checkout
    (found before anything of it runs): a plan is data, and naming an installed module must not run it.
    `loaded_ok`: a module already imported (by the checkout's own import) is taken wherever it lies."""
    if loaded_ok and name in sys.modules:
        return sys.modules[name]
    parts = name.split(".")
    for n in range(1, len(parts) + 1):
        dotted = ".".join(parts[:n])
        mod = sys.modules.get(dotted)
        if mod is not None:
            where = [getattr(mod, "__file__", None)] if getattr(mod, "__file__", None) else list(getattr(mod, "__path__", []) or [])
        else:
            spec = importlib.util.find_spec(dotted)
            if spec is None:
                raise ModuleNotFoundError(f"no module named {dotted}")
            where = [spec.origin] if spec.origin and spec.has_location else list(spec.submodule_search_locations or [])
        outside = [os.path.realpath(w) for w in where if not inside(w, root)]
        if not where or outside:
            raise NotCheckout(dotted, outside[0] if outside else "no file")
        if mod is None:
            importlib.import_module(dotted)
    return sys.modules[name]


def resolve(module, qualname):
    """The JITFunction named `qualname` in `module`, through autotune and heuristics wrappers. Each
    name is looked up where it is defined (inspect.getattr_static): a module's `__getattr__`, which
    imports submodules lazily (torch's `_inductor`, `_dynamo`), and properties run no code for a plan."""
    import inspect

    obj = module
    for part in qualname.split("."):
        obj = inspect.getattr_static(obj, part)
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            raise LookupError(f"{module.__name__}.{qualname}: {part} is a property, not a kernel")
    for _ in range(8):
        if hasattr(obj, "cache_key") and hasattr(obj, "fn") and hasattr(obj, "arg_names"):
            return obj
        obj = getattr(obj, "fn", None)
        if obj is None:
            break
    raise LookupError(f"{module.__name__}.{qualname} is not a Triton JIT function")


class _Props:
    def __init__(self, values):
        self.__dict__.update(values)


def show_device(facts):
    """Makes torch.cuda and Triton's driver answer with the GPU job's device, without touching any GPU."""
    if not facts:
        return
    torch_facts = facts.get("torch")
    if torch_facts:
        try:
            import torch

            props = _Props({**torch_facts.get("properties", {}), "name": torch_facts.get("name")})
            cap = tuple(torch_facts.get("capability", (0, 0)))
            cuda = torch.cuda
            cuda.is_available = lambda: True
            cuda.device_count = lambda: int(torch_facts.get("count", 1))
            cuda.current_device = lambda: 0
            cuda.get_device_name = lambda device=None: torch_facts.get("name")
            cuda.get_device_capability = lambda device=None: cap
            cuda.get_device_properties = lambda device=None: props
        except ImportError:
            pass
    target = facts.get("target")
    if target:
        from triton.backends.compiler import GPUTarget
        from triton.runtime import driver

        gpu = GPUTarget(target[0], target[1], target[2])
        triton_props = dict(facts.get("triton") or {})

        class Utils:
            def get_device_properties(self, device=0):
                return dict(triton_props)

        class ShownDriver:
            """The GPU job's device, as a kernel library's import asks it; it launches nothing."""

            utils = Utils()

            def is_active(self):
                return True

            def get_current_target(self):
                return gpu

            def get_current_device(self):
                return 0

            def set_current_device(self, device):
                pass

            def get_current_stream(self, device=None):
                return 0

            def get_active_torch_device(self):
                import torch

                return torch.device(target[0] if target[0] != "hip" else "cuda", 0)

            def get_device_interface(self):
                import torch

                return torch.cuda

            def get_benchmarker(self):
                def no_device(*args, **kwargs):
                    raise RuntimeError("kcache prewarm --cpu: no device to time kernels on")

                return no_device

        driver.set_active(ShownDriver())


_CUDA = {"at": None}


def note_cuda(stage):
    """Records the first stage after which this process had the CUDA driver library mapped."""
    if _CUDA["at"] is None:
        try:
            with open("/proc/self/maps") as f:
                if "libcuda.so" in f.read():
                    _CUDA["at"] = stage
        except OSError:
            pass


def driver_state(maps):
    """Whether the CUDA driver was ever initialised in this process (cuInit), and holds a context: asked
    of the driver library only where something already mapped it (a torch build links it), through
    cuCtxGetCurrent, which initialises nothing (CUDA_ERROR_NOT_INITIALIZED: cuInit never ran)."""
    if "libcuda.so" not in maps:
        return "not loaded"
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1", mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_GLOBAL)
        ctx = ctypes.c_void_p()
        status = lib.cuCtxGetCurrent(ctypes.byref(ctx))
        if status == 3:
            return "loaded, never initialised"
        return "initialised, a context current" if ctx.value else "initialised, no context current"
    except Exception as e:
        return f"loaded, state unknown ({type(e).__name__})"


def main():
    work = json.load(open(sys.argv[1]))
    worker, workers = int(sys.argv[2]), int(sys.argv[3])
    _OUT["file"] = sys.argv[4] if len(sys.argv) > 4 else None
    root = os.path.realpath(work["root"])
    _ROOT["root"] = root
    sys.path.insert(0, root)
    os.chdir(root)
    note_cuda("start")
    show_device(work.get("device"))
    note_cuda("showing the device (import torch)")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    note_cuda("import triton")

    compile_fn = triton.compile
    try:
        from triton.compiler import get_cache_key, make_backend
    except ImportError:
        get_cache_key = make_backend = None

    changed = []
    for i, e in enumerate(work["entries"]):
        try:
            try:
                module = checkout_import(e["module"], root)
            except NotCheckout as ex:
                if worker == 0:
                    emit({"i": i, "outcome": "missing",
                          "why": f"{e['module']} imports from {ex.where}, not {e['file']} in the checkout"})
                continue
            note_cuda(f"import {e['module']}")
            where = os.path.realpath(getattr(module, "__file__", "") or "")
            recorded = os.path.realpath(os.path.join(root, e["file"]))
            # A link in the checkout to a file outside it is not the checkout's own module.
            if where != recorded or os.path.commonpath([recorded, root]) != root:
                if worker == 0:
                    emit({"i": i, "outcome": "missing",
                          "why": f"{e['module']} imports from {where}, not {e['file']} in the checkout"})
                continue
            fn = resolve(module, e["qualname"])
        except Exception as ex:
            if worker == 0:
                emit({"i": i, "outcome": "missing", "why": f"{type(ex).__name__}: {ex}"[:2000]})
            continue
        if fn.cache_key != e["fnKey"]:
            changed.append((i, e, fn))
            continue
        if worker != 0:
            continue
        same = None
        if get_cache_key is not None:
            try:
                src, target, options, env = inputs(e, fn, ASTSource, GPUTarget)
                backend = make_backend(target)
                key = get_cache_key(src, backend, backend.parse_options(options), env)
                same = hashlib.sha256(key.encode("utf-8")).hexdigest() == e["hash"]
            except Exception as ex:
                same = f"{type(ex).__name__}: {ex}"[:500]
        emit({"i": i, "outcome": "unchanged", "sameKey": same})

    for n, (i, e, fn) in enumerate(changed):
        if n % workers != worker:
            continue
        t0 = time.time()
        hits = []
        try:
            src, target, options, env = inputs(e, fn, ASTSource, GPUTarget)
            with entry_environment(env):
                kernel = compile_with_listener(compile_fn, src, target, options, env, hits)
            note_cuda(f"compile {e['qualname']}")
            emit({"i": i, "outcome": "cached" if hits and hits[-1] else "compiled", "hash": kernel.hash,
                  "seconds": round(time.time() - t0, 3)})
        except Exception as ex:
            emit({"i": i, "outcome": "failed", "why": f"{type(ex).__name__}: {ex}"[:1000],
                  "trace": traceback.format_exc()[-1500:], "seconds": round(time.time() - t0, 3)})

    maps = open("/proc/self/maps").read() if os.path.exists("/proc/self/maps") else ""
    torch = sys.modules.get("torch")
    initialized = False
    try:
        initialized = bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        pass
    emit({"done": True, "worker": worker, "changed": len(changed), "libcuda": "libcuda.so" in maps,
          "libcudaAfter": _CUDA["at"], "cudaInitialized": initialized, "driver": driver_state(maps)})


def _invalidating():
    """Triton's own answer to which set variables its cache key reads, or None where it has none."""
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
    except Exception:
        try:
            from triton.knobs import get_cache_invalidating_env_vars  # type: ignore
        except Exception:
            return None
    return get_cache_invalidating_env_vars


class entry_environment:
    """The entry's recorded variables set around its compile, and every one put back after, whatever
    happens. Only variables the installed Triton's cache key reads, and none naming a path: a plan is
    data, and a variable such as CUDA_VISIBLE_DEVICES, LD_PRELOAD, TRITON_CACHE_DIR, a tool's path
    or LLVM_PASS_PLUGIN_PATH would make a GPU visible, run a program or write outside the cache.
    A variable refused fails the entry (ValueError, naming it): it is left to the GPU job."""

    def __init__(self, env):
        self.env = env
        self.saved = {}

    def __enter__(self):
        reads = _invalidating()
        for k, v in self.env.items():
            if not (isinstance(k, str) and isinstance(v, str)) or not k or "=" in k or "\0" in k or "\0" in v:
                raise ValueError(f"the plan's variable {k!r} is not a name and a value")
            if k.endswith(("_PATH", "_DIR", "_HOME")) or "/" in v:
                raise ValueError(f"the plan sets {k}, which names a path: not set by a prewarm")
            if reads is None:
                raise ValueError(f"the plan sets {k}, and this Triton says of no variable that its key reads it")
        try:
            for k, v in self.env.items():
                self.saved.setdefault(k, os.environ.get(k))
                os.environ[k] = v
                if k not in reads():
                    raise ValueError(f"the plan sets {k}, which Triton's cache key does not read: not set by a prewarm")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self.saved = {}
        return False


def inputs(e, fn, ASTSource, GPUTarget):
    signature = {k: decode(v) for k, v in e["signature"].items()}
    constexprs = {tuple(p): decode(v) for p, v in e["constexprs"]}
    attrs = {tuple(p): decode(v) for p, v in e["attrs"]}
    options = {k: decode(v) for k, v in e["options"].items()}
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    libs = options.get("extern_libs")
    # Library paths of the GPU machine: the backend puts this machine's own in (their bytes are keyed).
    if libs and not all(os.path.exists(p) for _, p in libs):
        options.pop("extern_libs")
    target = GPUTarget(e["target"][0], e["target"][1], e["target"][2])
    return ASTSource(fn, signature, constexprs, attrs), target, options, dict(e.get("env") or {})


def compile_with_listener(compile_fn, src, target, options, env, hits):
    try:
        from triton import knobs

        previous = knobs.compilation.listener

        def listener(*, src, metadata, metadata_group, times, cache_hit):
            hits.append(bool(cache_hit))

        knobs.compilation.listener = listener
    except Exception:
        knobs = previous = None
    try:
        import inspect

        takes_env = "_env_vars" in inspect.signature(getattr(compile_fn, "__wrapped__", compile_fn)).parameters
        if takes_env:
            return compile_fn(src, target=target, options=options, _env_vars=env)
        return compile_fn(src, target=target, options=options)
    finally:
        if knobs is not None:
            knobs.compilation.listener = previous


if __name__ == "__main__":
    main()
