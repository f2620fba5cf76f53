import { execFile } from "node:child_process";

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
dirs = list(sys.path)
prefixes = [sys.prefix]
if sys.prefix != sys.base_prefix:
    try:
        with open(os.path.join(sys.prefix, "pyvenv.cfg")) as f:
            if re.search(r"include-system-site-packages\s*=\s*true", f.read(), re.I):
                prefixes.append(sys.base_prefix)
    except OSError:
        pass
site_dirs = site.getsitepackages(prefixes)
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
export function probePython(python: string, env: NodeJS.ProcessEnv = process.env): Promise<PythonFacts> {
  const key = JSON.stringify([python, ...INPUTS.map((k) => env[k] ?? null)]);
  let p = probes.get(key);
  if (!p) {
    p = runProbe(python, env);
    p.catch(() => {});
    probes.set(key, p);
  }
  return p;
}

function runProbe(python: string, env: NodeJS.ProcessEnv): Promise<PythonFacts> {
  return new Promise((resolve, reject) => {
    execFile(
      python,
      ["-S", "-c", SCRIPT, STACK_DISTRIBUTIONS.join(",")],
      { env, timeout: 10_000, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`${python}: ${stderr.trim().split("\n").pop() || err.message}`));
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
