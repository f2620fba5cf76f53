"""triton.jit and triton.autotune on the simulated Triton, shaped as Triton 3.6's runtime/jit.py:
a JITFunction's `cache_key` hashes its source, its first line, the JIT functions it calls and the
constexpr globals it reads (Triton's DependenciesFinder, simplified to the names the code uses); a
launch specializes its arguments (pointers by dtype, integers by divisibility by 16, 1 as a constexpr,
constexpr parameters by value) and compiles through triton.compiler.compile(ASTSource, target, options)
for the active driver's target, once per specialization and process."""
import hashlib
import inspect
import textwrap

from ..language import constexpr


class Pointer:
    """A tensor as a launch sees it: a dtype and an address."""

    def __init__(self, dtype="fp32"):
        self.dtype = dtype

    def data_ptr(self):
        return 0


class JITFunction:
    def __init__(self, fn):
        self.fn = fn
        self.module = fn.__module__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__globals__ = fn.__globals__
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        raw, self.starting_line_number = inspect.getsourcelines(fn)
        src = textwrap.dedent("".join(raw))
        self.src = src[src.index("def "):]
        self.hash = None
        self.kernels = {}

    @property
    def cache_key(self):
        if self.hash is None:
            self.hash = f"recursion:{self.__qualname__}"
            deps = []
            for name in self.fn.__code__.co_names:
                value = self.fn.__globals__.get(name)
                if isinstance(value, JITFunction):
                    deps.append(f"{name}:{value.cache_key}")
                elif isinstance(value, constexpr):
                    deps.append(f"{name}={value.value!r}")
            text = self.src + str(self.starting_line_number) + "|".join(deps)
            self.hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self.hash

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Cannot call @triton.jit'd outside of the scope of a kernel")

    def specialize(self, args, kwargs):
        values = {k: v for k, v in kwargs.items() if k in self.arg_names}
        options = {k: v for k, v in kwargs.items() if k not in self.arg_names}
        bound = self.signature.bind(*args, **values)
        bound.apply_defaults()
        signature, constexprs, attrs = {}, {}, {}
        for i, (name, v) in enumerate(bound.arguments.items()):
            if self.signature.parameters[name].annotation is constexpr or isinstance(v, JITFunction):
                signature[name], constexprs[(i,)] = "constexpr", v
            elif isinstance(v, bool):
                signature[name] = "u1"
            elif isinstance(v, int):
                if v == 1:
                    signature[name], constexprs[(i,)] = "constexpr", 1
                else:
                    signature[name] = "i32"
                    if v % 16 == 0:
                        attrs[(i,)] = [["tt.divisibility", 16]]
            elif isinstance(v, float):
                signature[name] = "fp32"
            elif hasattr(v, "data_ptr"):
                signature[name] = "*" + str(v.dtype)
                attrs[(i,)] = [["tt.divisibility", 16]]
            else:
                raise TypeError(f"Unsupported type: {type(v)}")
        return signature, constexprs, attrs, options

    def run(self, *args, **kwargs):
        from ..compiler import ASTSource, compile, make_backend
        from .driver import driver

        signature, constexprs, attrs, options = self.specialize(args, kwargs)
        key = repr((signature, sorted((k, repr(v)) for k, v in constexprs.items()), attrs, sorted(options.items())))
        kernel = self.kernels.get(key)
        if kernel is None:
            target = driver.active.get_current_target()
            opts = make_backend(target).parse_options(options)
            kernel = compile(ASTSource(self, signature, constexprs, attrs), target=target, options=opts.__dict__)
            self.kernels[key] = kernel
        return kernel


def jit(fn=None, **_):
    if fn is None:
        return lambda f: JITFunction(f)
    return JITFunction(fn)


class Autotuned:
    """triton.autotune over a JIT function: the Autotuner's disk cache (runtime/autotuner.py) keyed by
    the function's cache_key, the configs and the tuning key; a miss compiles and times every config."""

    def __init__(self, fn, configs, key):
        self.fn = fn
        self.configs = configs
        self.key = key

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, **kwargs)

    def run(self, *args, **kwargs):
        from .autotuner import Autotuner

        bound = self.fn.signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in self.fn.arg_names})
        tuning_key = tuple(repr(bound.arguments.get(k)) for k in self.key)
        tuner = Autotuner(self.fn.fn, self.fn.cache_key, self.configs)

        def bench():
            timings = []
            for cfg in self.configs:
                self.fn.run(*args, **kwargs, **cfg)
                timings.append([cfg, 1.0 + 0.1 * len(timings)])
            return timings

        tuner.check_disk_cache(tuning_key, self.configs, bench)
        best = min(tuner.timings, key=lambda t: t[1])[0]
        return self.fn.run(*args, **kwargs, **best)


def autotune(configs, key):
    return lambda fn: Autotuned(fn, configs, key)
