import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { keepAnswer, readKept, stateDir } from "../state-dir.js";

/**
 * What the interpreter reports about itself and its installed packages. The script reads dist-info
 * METADATA and torch/version.py as text: importing torch or triton would take seconds.
 */
export interface PythonFacts {
  python: string;
  implementation: string;
  abi: string;
  system: string;
  machine: string;
  /** Normalised distribution name (torch, torch_npu, triton, triton_ascend, pytorch_triton...) to version. */
  packages: Record<string, string>;
  torchCuda: string | null;
  torchHip: string | null;
  /** The folder of the `triton` package that imports first: Triton-Ascend keys kernels on paths inside it. */
  tritonDir?: string | null;
  /** Every file and folder the answer was read from, with its mtime in ns (-1: absent). */
  readFrom?: Record<string, number>;
}

/** Distributions that decide which kernels get compiled; normalised as PEP 503 with '_' for '-'. */
export const STACK_DISTRIBUTIONS = [
  "torch",
  "torch_npu",
  "triton",
  "triton_ascend",
  "pytorch_triton",
  "pytorch_triton_rocm",
  "pytorch_triton_xpu",
] as const;

// Runs under `python -S`: skipping site's start-up (and the imports .pth files make) halves the
// probe's time. The folders site would add are computed here instead, .pth paths included.
const SCRIPT = String.raw`
import json, os, re, sys
import site
want = set(sys.argv[1].split(","))
# Every file and folder the answer was read from, with its mtime: kcache reuses the answer while
# none of them changed (installing or removing a package changes its site-packages folder).
read_from = {}
def mark(p):
    try:
        read_from[p] = os.stat(p).st_mtime_ns
    except OSError:
        read_from[p] = -1
mark(os.path.realpath(sys.executable))
# A virtual environment (venv, virtualenv, uv) is found by site, which -S skips: sys.prefix is then
# the base interpreter's. Look for its pyvenv.cfg as site does, beside the executable or one up.
exe_dir = os.path.dirname(os.path.abspath(sys.executable))
venv = next((d for d in (exe_dir, os.path.dirname(exe_dir)) if os.path.isfile(os.path.join(d, "pyvenv.cfg"))), None)
mark(os.path.join(venv or sys.prefix, "pyvenv.cfg"))
dirs = list(sys.path)
prefixes = [venv or sys.prefix]
if venv:
    try:
        with open(os.path.join(venv, "pyvenv.cfg")) as f:
            if re.search(r"include-system-site-packages\s*=\s*true", f.read(), re.I):
                prefixes.append(sys.base_prefix)
    except OSError:
        pass
site_dirs = site.getsitepackages(prefixes)
if venv:
    # A venv's own folder, which Debian's site (dist-packages) names only once it knows it is in one.
    own = os.path.join(venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    if own not in site_dirs:
        site_dirs.insert(0, own)
if site.check_enableusersite():
    site_dirs.append(site.getusersitepackages())
for d in site_dirs:
    if d not in dirs:
        dirs.append(d)
    try:
        pth = [n for n in os.listdir(d) if n.endswith(".pth")]
    except OSError:
        pth = []
    for n in pth:
        mark(os.path.join(d, n))
        try:
            with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith(("#", "import ", "import	")):
                        p = os.path.join(d, line)
                        if p not in dirs:
                            dirs.append(p)
        except OSError:
            pass
pkgs, torch_dirs, triton_dir = {}, [], None
for d in dirs:
    if d:
        mark(os.path.abspath(d))
    if not d or not os.path.isdir(d):
        continue
    try:
        names = os.listdir(d)
    except OSError:
        continue
    if "torch" in names:
        torch_dirs.append(os.path.join(d, "torch"))
    if triton_dir is None and "triton" in names and os.path.isdir(os.path.join(d, "triton")):
        triton_dir = os.path.abspath(os.path.join(d, "triton"))
    for n in names:
        for suffix, meta in ((".dist-info", "METADATA"), (".egg-info", "PKG-INFO")):
            if not n.endswith(suffix):
                continue
            norm = re.sub(r"[-_.]+", "_", n[: -len(suffix)].split("-")[0]).lower()
            if norm not in want or norm in pkgs:
                continue
            mark(os.path.join(d, n, meta))
            try:
                with open(os.path.join(d, n, meta), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            pkgs[norm] = line.split(":", 1)[1].strip()
                            break
                        if not line.strip():
                            break
            except OSError:
                pass
cuda = hip = None
for t in torch_dirs:
    mark(os.path.join(t, "version.py"))
    try:
        with open(os.path.join(t, "version.py"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        continue
    m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    cuda = m.group(1) if m else None
    m = re.search(r"^hip\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    hip = m.group(1) if m else None
    break
u = os.uname()
import sysconfig
print(json.dumps({
    "python": "%d.%d.%d" % sys.version_info[:3],
    "implementation": sys.implementation.name,
    "abi": sysconfig.get_config_var("SOABI") or "",
    "system": u.sysname.lower(),
    "machine": u.machine,
    "packages": pkgs,
    "torchCuda": cuda,
    "torchHip": hip,
    "tritonDir": triton_dir,
    "readFrom": read_from,
}))
`;

/** What decides the probe's answer besides the script: the interpreter PATH finds and where it looks. */
const INPUTS = ["PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "HOME"] as const;
const probes = new Map<string, Promise<PythonFacts>>();

/**
 * Runs the probe script in `python`; rejects with the interpreter's own message when it cannot run.
 * A probe with the same interpreter and inputs is run once per process: bin/kcache.js starts it
 * before the CLI's modules load, so the ~60 ms the interpreter takes overlaps with Node's start-up.
 */
export function probePython(python: string, env: NodeJS.ProcessEnv): Promise<PythonFacts> {
  const key = JSON.stringify([python, ...INPUTS.map((k) => env[k] ?? null)]);
  let p = probes.get(key);
  if (!p) {
    const cache = cacheFile(python, key, env);
    const cached = cache ? readCached(cache.file, cache.id) : null;
    p = cached
      ? Promise.resolve(cached)
      : runProbe(python, env).then((facts) => {
          if (cache) keepAnswer(cache.file, { id: cache.id, facts });
          return facts;
        });
    p.catch(() => {});
    probes.set(key, p);
  }
  return p;
}

/**
 * Where the probe's answer is kept between commands (restore, run and save of one job each probe the
 * same interpreter): keyed by the interpreter PATH finds (its real path) and the inputs, and reused
 * only while every file and folder it was read from keeps its mtime. Null when the interpreter
 * cannot be found on PATH here (the probe then runs and reports why).
 */
function cacheFile(python: string, key: string, env: NodeJS.ProcessEnv): { file: string; id: string } | null {
  const exe = findOnPath(python, env);
  if (!exe) return null;
  // The script is part of the key: a kcache that probes differently never reuses an older answer.
  const id = createHash("sha256").update(`${key}\0${exe}\0${SCRIPT}`).digest("hex").slice(0, 20);
  return { file: path.join(stateDir(env), "python-probe", `${id}.json`), id };
}

/** The interpreter `cmd` names, as the job's PATH finds it (its real path); null where it finds none. */
export function findOnPath(cmd: string, env: NodeJS.ProcessEnv): string | null {
  const dirs = cmd.includes("/") ? [""] : (env.PATH ?? "").split(path.delimiter).filter(Boolean);
  for (const d of dirs) {
    try {
      const p = d ? path.join(d, cmd) : cmd;
      fs.accessSync(p, fs.constants.X_OK);
      return fs.realpathSync(p);
    } catch {}
  }
  return null;
}

/** Whether a kept answer has the probe's shape and types throughout (else the probe runs again). */
function isFacts(f: unknown): f is PythonFacts {
  const o = f as Record<string, unknown> | null;
  const str = (v: unknown) => typeof v === "string";
  const strOrNull = (v: unknown) => v === null || v === undefined || str(v);
  const record = (v: unknown, each: (x: unknown) => boolean) =>
    !!v && typeof v === "object" && !Array.isArray(v) && Object.values(v).every(each);
  return (
    !!o &&
    ["python", "implementation", "abi", "system", "machine"].every((k) => str(o[k])) &&
    record(o.packages, str) &&
    strOrNull(o.torchCuda) &&
    strOrNull(o.torchHip) &&
    strOrNull(o.tritonDir) &&
    record(o.readFrom, (x) => typeof x === "number")
  );
}

function readCached(file: string, id: string): PythonFacts | null {
  const saved = readKept(file) as { id?: string; facts?: PythonFacts } | undefined;
  const from = saved?.facts?.readFrom;
  if (saved?.id !== id || !from || Object.keys(from).length === 0 || !isFacts(saved.facts)) return null;
  for (const [p, mtime] of Object.entries(from)) {
    const st = fs.statSync(p, { bigint: true, throwIfNoEntry: false });
    if ((st ? Number(st.mtimeNs) : -1) !== mtime) return null;
  }
  return saved.facts as PythonFacts;
}

/** How long the Python probe may take before the key goes without it. */
const PROBE_TIMEOUT_MS = 30_000;

function runProbe(python: string, env: NodeJS.ProcessEnv): Promise<PythonFacts> {
  return new Promise((resolve, reject) => {
    execFile(
      python,
      ["-S", "-c", SCRIPT, STACK_DISTRIBUTIONS.join(",")],
      // 30 s: a probe that fails is stack-incomplete (exit 4 under --strict), and on a loaded runner
      // (32 kcache processes starting at once) an import of torch's metadata took over 10 s. Killed
      // outright: an interpreter (or a wrapper script) that ignores SIGTERM held kcache for good.
      { env, timeout: PROBE_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          // Node's own message repeats the command line, the whole probe script with it: say how it ended.
          const ended = err.killed
            ? `timed out after ${PROBE_TIMEOUT_MS / 1000} s`
            : typeof err.code === "number"
              ? `exited ${err.code}`
              : err.code === "ENOENT"
                ? "not found"
                : (err.signal ?? err.message.split("\n")[0]);
          reject(new Error(`${python}: ${stderr.trim().split("\n").pop() || ended}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout) as PythonFacts);
        } catch {
          reject(new Error(`${python}: probe printed something that is not JSON: ${stdout.slice(0, 200)}`));
        }
      },
    );
  });
}
