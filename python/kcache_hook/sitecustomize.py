"""kcache's kernel telemetry hook, put first on PYTHONPATH by `kcache run`.

When (and only when) the job imports triton.knobs, it registers
triton.knobs.compilation.listener (Triton >= 3.4), which Triton calls for every kernel load, and
appends one JSON line per kernel to $KCACHE_TELEMETRY_FILE: name, cache_hit, compile seconds, pid.
A listener the job already had keeps being called. When the job imports triton.runtime.cache, its
FileCacheManager's get_file and get_group are wrapped: each cache entry folder a lookup found files
in is written once per process ({"used": folder}), so kcache knows which entries the job used
(kernels, launchers and autotune results alike, on any Triton version), and so is each file its
put and put_group wrote, with the sha256 of the bytes written ({"wrote": folder, "file": name,
"sha256": ..., "t": ...}), so a save on a folder other jobs may write knows which entries this job's
processes made, as they made them (a file changed since is not theirs); each autotune result looked
up is written with whether it was there ({"autotune": fn, "hit": ..., "folder": ...}); under
KCACHE_AUTOTUNE=fresh (a profile's autotune: fresh) a process is served only the results it wrote
itself, so each process of the job tunes for itself. When the job
imports triton.runtime.autotuner, the module file of each autotuned kernel is written once
({"autotuneModule": fn, "file": ...}): an autotune result's salt is made of its package. When the job
imports triton.compiler.compiler (Triton >= 3.3), its compile() is wrapped (_kcache_plan.py): each
kernel's compile plan ({"plan": ...}: what `kcache prewarm --cpu` compiles it again from) and, once,
the device facts a library reads at import ({"device": ...}) are written. Under a
lazy restore (KCACHE_LAZY_SOCKET, set by kcache run or for the steps after the action's restore
step), a lookup of a file absent from its entry folder first asks kcache to fetch that entry from
the store (docs/concepts.md); the hook is in for that alone when no telemetry file is named. At exit each process that
imported triton writes one line saying whether the listener and the wrapper were in, with
torch.compile's FX graph and AOTAutograd cache hits and misses when it compiled. Then any other
sitecustomize on the path runs, as it would have without kcache. Nothing here may break the job:
errors are ignored.
"""
import json
import os
import sys
import threading
import time

_FILE = os.environ.get("KCACHE_TELEMETRY_FILE")
_HERE = os.path.dirname(os.path.abspath(__file__))
_state = {"registered": False, "downstream": None, "usage": False}
_local = threading.local()


def _write(record):
    if not _FILE:
        return
    try:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        fd = os.open(_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _compile_seconds(times):
    try:
        if isinstance(times, dict):
            v = times.get("total")
            return float(v) if v is not None else None
        total = getattr(times, "total", None)
        if callable(total):
            total = total()
        if total is None:
            parts = [getattr(times, "ir_initialization", 0), getattr(times, "store_results", 0)]
            parts += [t for _, t in getattr(times, "lowering_stages", [])]
            total = sum(parts)
        return float(total) / 1e6  # CompileTimes counts microseconds
    except Exception:
        return None


def _register(knobs):
    try:
        compilation = knobs.compilation
        _state["downstream"] = getattr(compilation, "listener", None)
    except Exception:
        return

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        # A job listener that wraps the one it found (ours) calls back into us: count once.
        if getattr(_local, "inside", False):
            return None
        _local.inside = True
        try:
            return _record_and_forward(src, metadata, metadata_group, times, cache_hit)
        finally:
            _local.inside = False

    def _record_and_forward(src, metadata, metadata_group, times, cache_hit):
        try:
            name = metadata.get("name") if isinstance(metadata, dict) else getattr(metadata, "name", None)
            if name is None:
                name = getattr(src, "name", None) or getattr(getattr(src, "fn", None), "__name__", None)
            digest = metadata.get("hash") if isinstance(metadata, dict) else getattr(metadata, "hash", None)
            _write({"kernel": str(name), "cache_hit": bool(cache_hit), "hash": digest if isinstance(digest, str) else None,
                    "compile_s": None if cache_hit else _compile_seconds(times), "pid": os.getpid(), "t": time.time()})
        except Exception:
            pass
        downstream = _state["downstream"]
        if downstream is not None:
            return downstream(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)

    try:
        compilation.listener = listener
        # A job that sets its own listener later must not switch kcache's off: keep ours in place and
        # call theirs from it.
        base = type(compilation)

        class _Chained(base):
            def __setattr__(self, name, value):
                if name == "listener" and value is not listener:
                    _state["downstream"] = value
                    return
                base.__setattr__(self, name, value)

        try:
            compilation.__class__ = _Chained
        except TypeError:
            pass
        _state["registered"] = True
    except Exception:
        pass


_LAZY = {"socket": os.environ.get("KCACHE_LAZY_SOCKET"), "down": False, "asked": set(),
         "live": os.environ.get("KCACHE_LIVE") == "1"}


def _live_wrote(manager, filename, digest=None):
    """Under store.live, tells kcache that this process wrote into an entry folder: kcache shares the
    entry once it settles and is complete. Nothing is waited for; autotune results are never shared."""
    if not _LAZY["live"] or _LAZY["down"] or not _LAZY["socket"]:
        return
    try:
        if isinstance(filename, str) and filename.endswith(".autotune.json"):
            return
        import socket

        folder = os.path.abspath(getattr(manager, "cache_dir", "") or "")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(2.0)
            s.connect(_LAZY["socket"])
            # The file and its digest as written: kcache shares the entry only while every file is so.
            s.sendall((json.dumps({"wrote": folder, "file": filename, "sha256": digest}) + "\n").encode())
        finally:
            s.close()
    except Exception:
        pass


def _lazy_fetch(manager, filename, lookup):
    """Under a lazy restore (KCACHE_LAZY_SOCKET), asks kcache to place the entry folder a lookup is
    about when the file is not there: kcache fetches that entry alone from the store, verifies it
    and places it whole, then Triton reads it as if it had been restored. Each folder is asked about
    once per process; after a lookup kcache could not answer in time, none is asked again."""
    sock_path = _LAZY["socket"]
    if not sock_path or _LAZY["down"]:
        return
    try:
        folder = os.path.abspath(getattr(manager, "cache_dir", "") or "")
        if not folder or folder in _LAZY["asked"] or os.path.exists(os.path.join(folder, lookup)):
            return
        _LAZY["asked"].add(folder)
        import socket

        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(float(os.environ.get("KCACHE_LAZY_WAIT", "65")))
            s.connect(sock_path)
            s.sendall((json.dumps({"folder": folder, "file": filename}) + "\n").encode())
            reply = b""
            while not reply.endswith(b"\n"):
                piece = s.recv(4096)
                if not piece:
                    break
                reply += piece
        finally:
            s.close()
    except Exception:
        _LAZY["down"] = True


def _wrap_cache_manager(module):
    """Records the entry folder of every cache lookup that hit, once per folder and process."""
    cls = getattr(module, "FileCacheManager", None)
    if cls is None or getattr(cls, "_kcache_wrapped", False):
        return
    seen = set()

    def note(manager, result):
        try:
            folder = getattr(manager, "cache_dir", None)
            if result and folder and folder not in seen:
                seen.add(folder)
                _write({"used": os.path.abspath(folder), "pid": os.getpid()})
        except Exception:
            pass
        return result

    get_file, get_group = cls.get_file, cls.get_group
    tuned = set()

    def note_autotune(manager, filename, result):
        # An autotune result looked up: a hit is a winner the job was given, a miss one it tunes now.
        try:
            folder = os.path.abspath(getattr(manager, "cache_dir", "") or "")
            if folder and (folder, bool(result)) not in tuned:
                tuned.add((folder, bool(result)))
                _write({"autotune": filename[: -len(".autotune.json")], "hit": bool(result), "folder": folder,
                        "pid": os.getpid()})
        except Exception:
            pass

    # Under autotune: fresh each process tunes for itself: a result is served only to the process that
    # wrote it (Triton keeps it in memory after that anyway), never one another process of the job
    # tuned, such as the other side of a HEAD-vs-BASE comparison.
    fresh = os.environ.get("KCACHE_AUTOTUNE") == "fresh"
    own = set()
    wrote = set()
    put = cls.put
    put_group = getattr(cls, "put_group", None)

    def note_wrote(manager, filename, digest):
        # A file this process wrote, with the digest of what it wrote: on a folder other jobs may write, a
        # save uploads an entry as the job's own only when every file of it is one of these, unchanged.
        try:
            folder = os.path.abspath(getattr(manager, "cache_dir", "") or "")
            if folder and isinstance(filename, str) and digest and (folder, filename, digest) not in wrote:
                wrote.add((folder, filename, digest))
                _write({"wrote": folder, "file": filename, "sha256": digest, "pid": os.getpid(), "t": time.time()})
        except Exception:
            pass

    def digest_of(data):
        # The bytes Triton's put writes: bytes as they are; anything else as str(data) through a text-mode
        # file, in the encoding open() uses (UTF-8 in UTF-8 mode, else the locale's).
        try:
            import hashlib

            if not isinstance(data, bytes):
                import locale

                data = str(data).encode(locale.getpreferredencoding(False))
            return hashlib.sha256(data).hexdigest()
        except Exception:
            return None

    def wrapped_put(self, data, filename, *args, **kwargs):
        result = put(self, data, filename, *args, **kwargs)
        digest = digest_of(data)
        note_wrote(self, filename, digest)
        _local.put_file = filename
        _live_wrote(self, filename, digest)
        try:
            if fresh and isinstance(filename, str) and filename.endswith(".autotune.json"):
                own.add((os.path.abspath(getattr(self, "cache_dir", "") or ""), filename))
        except Exception:
            pass
        return result

    def wrapped_put_group(self, *args, **kwargs):
        _local.put_file = None
        result = put_group(self, *args, **kwargs)
        # Triton's put_group writes the group file through put (recorded there); a manager whose
        # put_group writes it by itself has it read back from the path it returns.
        try:
            if isinstance(result, str) and _local.put_file != os.path.basename(result):
                with open(result, "rb") as f:
                    digest = digest_of(f.read())
                note_wrote(self, os.path.basename(result), digest)
                _live_wrote(self, os.path.basename(result), digest)
        except Exception:
            pass
        return result

    def wrapped_get_file(self, filename):
        if isinstance(filename, str) and filename.endswith(".autotune.json"):
            if fresh and (os.path.abspath(getattr(self, "cache_dir", "") or ""), filename) not in own:
                note_autotune(self, filename, None)
                return None
            _lazy_fetch(self, filename, filename)
            result = get_file(self, filename)
            note_autotune(self, filename, result)
            return note(self, result)
        if isinstance(filename, str):
            _lazy_fetch(self, filename, filename)
        return note(self, get_file(self, filename))

    def wrapped_get_group(self, filename):
        if isinstance(filename, str):
            _lazy_fetch(self, filename, "__grp__" + filename)
        return note(self, get_group(self, filename))

    try:
        cls.get_file = wrapped_get_file
        cls.get_group = wrapped_get_group
        cls.put = wrapped_put
        if put_group is not None:
            cls.put_group = wrapped_put_group
        cls._kcache_wrapped = True
        _state["usage"] = True
    except Exception:
        pass


def _wrap_autotuner(module):
    """Records the module file of every autotuned kernel whose disk cache is checked (Triton >= 3.4):
    what an autotune result's salt is made of (the kernel's Python package)."""
    cls = getattr(module, "Autotuner", None)
    check = getattr(cls, "check_disk_cache", None)
    if cls is None or check is None or getattr(cls, "_kcache_wrapped", False):
        return
    seen = set()

    def wrapped(self, *args, **kwargs):
        try:
            import inspect

            fn = getattr(self, "base_fn", None) or getattr(getattr(self, "fn", None), "fn", None)
            name = getattr(fn, "__name__", None)
            source = inspect.getsourcefile(fn) if fn is not None else None
            if name and source and (name, source) not in seen:
                seen.add((name, source))
                _write({"autotuneModule": name[:150], "file": os.path.abspath(source), "pid": os.getpid()})
        except Exception:
            pass
        return check(self, *args, **kwargs)

    try:
        cls.check_disk_cache = wrapped
        cls._kcache_wrapped = True
    except Exception:
        pass


def _wrap_compile(module):
    """Records each kernel's compile plan (_kcache_plan.py): what `kcache prewarm --cpu` compiles again."""
    if not _FILE:
        return
    try:
        sys.path.insert(0, _HERE)
        try:
            import _kcache_plan
        finally:
            sys.path.remove(_HERE)
        _kcache_plan.wrap(module, _write)
    except Exception:
        pass


# Modules whose loading the hook follows, and what it does once each has loaded.
_AFTER_LOAD = {"triton.knobs": _register, "triton.runtime.cache": _wrap_cache_manager,
               "triton.runtime.autotuner": _wrap_autotuner, "triton.compiler.compiler": _wrap_compile}


class _KnobsFinder:
    """Wraps the loaders of triton.knobs and triton.runtime.cache so the hook is in right after they load."""

    def find_spec(self, name, path=None, target=None):
        if name not in _AFTER_LOAD:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        exec_module = loader.exec_module

        after = _AFTER_LOAD[name]

        def exec_and_register(module):
            exec_module(module)
            after(module)

        loader.exec_module = exec_and_register
        return spec


def _torch_counters():
    """torch.compile's own cache counters in this process (FX graph and AOTAutograd caches), if it compiled."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    if counters is None:
        return None
    try:
        inductor, aot = counters["inductor"], counters["aot_autograd"]
        return {"fxgraph_hit": int(inductor.get("fxgraph_cache_hit", 0)),
                "fxgraph_miss": int(inductor.get("fxgraph_cache_miss", 0)),
                "aot_hit": int(aot.get("autograd_cache_hit", 0)),
                "aot_miss": int(aot.get("autograd_cache_miss", 0))}
    except Exception:
        return None


def _at_exit():
    if "triton" in sys.modules:
        triton = sys.modules["triton"]
        _write({"event": "exit", "pid": os.getpid(), "triton": getattr(triton, "__version__", None),
                "listener": _state["registered"], "usage": _state["usage"], "torch": _torch_counters()})


def _run_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or os.path.abspath(spec.origin or "") == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if _FILE or _LAZY["socket"]:
    try:
        for _name, _after in _AFTER_LOAD.items():
            if _name in sys.modules:
                _after(sys.modules[_name])
        if not all(n in sys.modules for n in _AFTER_LOAD):
            sys.meta_path.insert(0, _KnobsFinder())
        if _FILE:
            import atexit

            atexit.register(_at_exit)
    except Exception:
        pass
try:
    _run_next_sitecustomize()
except Exception as e:  # the job's own sitecustomize failed: say so, as Python would have
    sys.stderr.write("kcache hook: error in sitecustomize: %r\n" % (e,))
