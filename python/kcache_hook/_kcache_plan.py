"""kcache's compile plan recorder (docs/cpu-prewarm.md), loaded by kcache's sitecustomize hook.

It wraps triton.compiler.compiler.compile (Triton >= 3.3, the call every JIT compile and cache load
goes through) and writes, once per kernel and process, what `kcache prewarm --cpu` needs to compile
that kernel again on a machine with no GPU: the JIT function (module, qualified name, source file),
its source hash as Triton computes it (`cache_key`: its source, the functions it calls, the constexpr
globals it reads), the signature, constexprs and specialization attributes, the compile options, the
target, the environment Triton's cache key reads, and the key the compile had. Once per process it
also writes the device facts a kernel library may ask at import (torch.cuda's name, capability and
properties, Triton's device properties), only where the job already made a CUDA context: the prewarm
shows the same facts to the library's import, so it picks the same configs and constexprs.

Values Triton takes that JSON has no form for are tagged ({"tuple": [...]}, {"dtype": "fp16"},
{"jit": "module:qualname"}); a kernel with a constexpr of any other type is recorded as
unplannable, with the reason. Nothing here may break the job: every error is swallowed.
"""
import inspect
import os
import sys

_state = {"write": None, "seen": set(), "device": False}


class _Unplannable(Exception):
    pass


def encode(v):
    """A Triton value (signature type, constexpr, attribute, option) as JSON, tagged where JSON has no form."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return {"float": repr(v)}
        return v
    if isinstance(v, tuple):
        return {"tuple": [encode(x) for x in v]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {"dict": [[encode(k), encode(x)] for k, x in v.items()]}
    cls = type(v).__name__
    if cls == "dtype" or (cls.endswith("_type") and hasattr(v, "name")):
        return {"dtype": str(v)}
    if cls == "constexpr" and hasattr(v, "value"):
        return {"constexpr": encode(v.value)}
    if hasattr(v, "cache_key") and hasattr(v, "fn"):
        fn = v.fn
        return {"jit": f"{fn.__module__}:{fn.__qualname__}"}
    raise _Unplannable(f"a value of type {cls}")


def _env_vars(given):
    if given is not None:
        return dict(given)
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
    except Exception:
        try:
            from triton.knobs import get_cache_invalidating_env_vars  # type: ignore
        except Exception:
            return {}
    try:
        return dict(get_cache_invalidating_env_vars())
    except Exception:
        return {}


def _device_facts(target):
    """The facts a library asks the device at import, read only where the job already made a CUDA context."""
    facts = {"target": [target.backend, target.arch, target.warp_size]}
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            i = torch.cuda.current_device()
            p = torch.cuda.get_device_properties(i)
            props = {}
            for name in dir(p):
                if name.startswith("_"):
                    continue
                value = getattr(p, name, None)
                if isinstance(value, (bool, int, float, str)):
                    props[name] = value
            facts["torch"] = {"name": torch.cuda.get_device_name(i),
                              "capability": list(torch.cuda.get_device_capability(i)),
                              "count": torch.cuda.device_count(), "properties": props}
    except Exception:
        pass
    try:
        from triton.runtime import driver

        active = driver.active
        d = active.get_current_device()
        props = active.utils.get_device_properties(d)
        facts["triton"] = {k: v for k, v in dict(props).items() if isinstance(v, (bool, int, float, str))}
    except Exception:
        pass
    return facts


def record(src, target, options, env_vars, kernel):
    write = _state["write"]
    fn = getattr(src, "fn", None)
    if write is None or fn is None or not hasattr(fn, "cache_key") or not hasattr(src, "signature"):
        return
    digest = getattr(kernel, "hash", None)
    if not isinstance(digest, str) or digest in _state["seen"]:
        return
    _state["seen"].add(digest)
    py = getattr(fn, "fn", None)
    meta = getattr(kernel, "metadata", None)
    target = getattr(meta, "target", None) or target
    entry = {"v": 1, "module": getattr(py, "__module__", None), "qualname": getattr(py, "__qualname__", None),
             "name": getattr(src, "name", None), "hash": digest, "triton": getattr(sys.modules.get("triton"), "__version__", None)}
    try:
        entry["file"] = os.path.abspath(inspect.getsourcefile(py))
        entry["fnKey"] = fn.cache_key
        entry["target"] = [target.backend, target.arch, target.warp_size]
        entry["signature"] = {k: encode(v) for k, v in src.signature.items()}
        entry["constexprs"] = [[list(p), encode(v)] for p, v in src.constants.items()]
        entry["attrs"] = [[list(p), encode(v)] for p, v in src.attrs.items()]
        entry["options"] = {k: encode(v) for k, v in dict(options or {}).items()}
        entry["env"] = {str(k): str(v) for k, v in _env_vars(env_vars).items()}
        if entry["module"] == "__main__":
            raise _Unplannable("a kernel of a script run as __main__ (a prewarm cannot import it)")
    except _Unplannable as e:
        entry["unplannable"] = str(e)
    except Exception as e:
        entry["unplannable"] = f"not recorded: {type(e).__name__}"
    if not _state["device"] and "target" in entry:
        _state["device"] = True
        try:
            write({"device": _device_facts(target), "pid": os.getpid()})
        except Exception:
            pass
    write({"plan": entry, "pid": os.getpid()})


def wrap(module, write):
    """Wraps `module.compile` (triton.compiler.compiler) and the names it was imported as."""
    original = getattr(module, "compile", None)
    if original is None or getattr(original, "_kcache_plan", False):
        return
    _state["write"] = write

    def compile(src, target=None, options=None, *args, **kwargs):
        kernel = original(src, target, options, *args, **kwargs)
        try:
            env_vars = kwargs.get("_env_vars", args[0] if args else None)
            record(src, target, options, env_vars, kernel)
        except Exception:
            pass
        return kernel

    compile._kcache_plan = True
    compile.__wrapped__ = original
    module.compile = compile
    for name in ("triton.compiler", "triton"):
        parent = sys.modules.get(name)
        if parent is not None and getattr(parent, "compile", None) is original:
            parent.compile = compile
