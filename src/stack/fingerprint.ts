import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  type AcceleratorFacts,
  type AcceleratorProbeRoots,
  probeAccelerator,
  probeRoots,
  runTool,
} from "./accelerator-probe.js";
import { type PythonFacts, probePython } from "./python-probe.js";

/**
 * The software stack in two parts. Key parts decide what code gets compiled (Python ABI, torch,
 * torch_npu, Triton or Triton-Ascend, CUDA/HIP or CANN, bishengir, where the triton package lives,
 * Ascend codegen variables, pins): only they go into the stack id. Informational parts (driver,
 * device model, hostname) are shown and stored, never keyed: keying on them would split one runner
 * pool's cache for nothing, and npu-smi's answer changes while another process holds the card.
 */
export interface StackFingerprint {
  /** Key parts, sorted: os, arch, python, torch, triton, cann, pin.image... */
  components: Record<string, string>;
  /** Informational parts, sorted: accelerator, driver, host. */
  info: Record<string, string>;
  /** 12 hex digits of sha256 over the key parts' canonical form. */
  stackId: string;
  /** Pins that disagree with the probe. */
  mismatches: string[];
  /** Key parts that must exist and do not (CANN on an Ascend machine): exit 4 under --strict, like a mismatch. */
  errors: string[];
  /** What could not be probed (no python, say): the fingerprint still forms, with a warning. */
  warnings: string[];
}

export interface StackProbeOptions {
  python: string;
  pins: Record<string, string>;
  env: NodeJS.ProcessEnv;
  accelerator?: AcceleratorProbeRoots;
}

/**
 * Variables that change Triton-Ascend's compile options without being in its kernel key
 * (python/triton/backends/ascend/{compiler,utils}.py): when set, they are key parts.
 */
export const ASCEND_CODEGEN_VARIABLES = [
  "TRITON_ENABLE_SANITIZER",
  "TRITON_ALL_BLOCKS_PARALLEL",
  "ENABLE_PRINT_UB_BITS",
  "TRITON_MEMORY_DISPLAY",
  "TRITON_ENABLE_LIBDEVICE_SIMT",
  "TRITON_DISABLE_FFTS",
] as const;

/** Probes Python packages and the accelerator in parallel, then bishengir on Ascend, and forms the fingerprint. */
export async function probeStack(opts: StackProbeOptions): Promise<StackFingerprint> {
  const { env } = opts;
  const warnings: string[] = [];
  // A probe that failed or hung leaves a key of the OS and the architecture alone: stack-incomplete,
  // a warning, and exit 4 under --strict (docs/cli.md), like any other part that could not be probed.
  const failures: string[] = [];
  const [py, acc] = await Promise.all([
    probePython(opts.python, env).catch((e: Error) => {
      failures.push(
        `python probe failed (${e.message}); the stack key has no Python packages in it: it covers only the OS and architecture`,
      );
      return null;
    }),
    probeAccelerator(opts.accelerator ?? probeRoots(env)),
  ]);
  const onAscend = acc.vendor === "ascend" || Boolean(py?.packages.triton_ascend);
  const bishengir = onAscend ? await probeBishengir(py?.tritonDir ?? null, acc.cannHome ?? null, env) : null;
  const fp = fingerprintFrom(py, acc, opts.pins, warnings, {
    env,
    bishengir,
    host: os.hostname(),
  });
  return failures.length ? { ...fp, errors: [...failures, ...fp.errors] } : fp;
}

/**
 * bishengir-compile's `--version`, found where Triton-Ascend finds it: in the triton wheel
 * (`triton/_C/bishengir/`), else in CANN, else on PATH. Null where there is none.
 */
async function probeBishengir(
  tritonDir: string | null,
  cannHome: string | null,
  env: NodeJS.ProcessEnv,
): Promise<string | null> {
  const candidates = [
    tritonDir && path.join(tritonDir, "_C", "bishengir", "bishengir-compile"),
    cannHome && path.join(cannHome, "bin", "bishengir-compile"),
    cannHome && path.join(cannHome, "compiler", "bishengir", "bin", "bishengir-compile"),
    ...(env.PATH ?? "").split(path.delimiter).map((d) => d && path.join(d, "bishengir-compile")),
  ].filter((c): c is string => Boolean(c));
  const found = candidates.find((c) => {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) return null;
  const out = await runTool(found, ["--version"], env);
  const line = out
    ?.split("\n")
    .map((l) => l.trim())
    .find(Boolean);
  return line ?? `unknown version at ${found}`;
}

/** Facts besides the Python and accelerator probes; tests give them directly. */
export interface ExtraFacts {
  env?: NodeJS.ProcessEnv;
  bishengir?: string | null;
  host?: string;
}

/** Forms the fingerprint from probe results; pure, so tests can feed it facts. */
export function fingerprintFrom(
  py: PythonFacts | null,
  acc: AcceleratorFacts,
  pins: Record<string, string>,
  warnings: string[] = [],
  extra: ExtraFacts = {},
): StackFingerprint {
  const probed: Record<string, string> = {};
  const info: Record<string, string> = {};
  const set = (to: Record<string, string>, k: string, v: string | null | undefined) => {
    if (v) to[k] = v;
  };
  if (py) {
    set(probed, "os", py.system);
    set(probed, "arch", py.machine);
    set(probed, "python", `${py.python}`);
    set(probed, "python-abi", py.abi || py.implementation);
    for (const [name, version] of Object.entries(py.packages)) set(probed, name.replace(/_/g, "-"), version);
    set(probed, "torch-cuda", py.torchCuda);
    set(probed, "torch-hip", py.torchHip);
    set(probed, "cuda-arch", acc.computeCapabilities?.join(","));
    if (py.tritonDir && (py.packages.triton_ascend || acc.vendor === "ascend"))
      set(probed, "triton-path", py.tritonDir);
  } else {
    set(probed, "os", process.platform);
    set(probed, "arch", process.arch);
  }
  const mismatches: string[] = [];
  const errors: string[] = [];
  // A cache step placed before the install step (where actions/cache steps usually stand) finds no
  // compiler yet: the key would silently cover only the platform and Python.
  if (py && Object.keys(py.packages).length === 0) {
    const what = acc.vendor === "ascend" ? "torch, torch_npu, triton or triton-ascend" : "torch or triton";
    errors.push(
      `no ${what} is installed for the Python kcache probes (stack.python, default python3), so the key covers only Python and the platform (os, arch, python): put the kcache step after the step that installs them, or set stack.python to the job's interpreter`,
    );
  }
  if (acc.vendor === "ascend") {
    if (acc.cann) probed.cann = acc.cann;
    else if (!("cann" in pins)) {
      probed.cann = "unknown";
      errors.push(
        "cann: this machine has an Ascend driver but no CANN toolkit was found (set ASCEND_TOOLKIT_HOME, or source the toolkit's set_env.sh, or pin cann)",
      );
    }
  }
  set(probed, "bishengir", extra.bishengir);
  for (const v of ASCEND_CODEGEN_VARIABLES) set(probed, `env.${v}`, extra.env?.[v]);
  if (acc.models.length) set(info, "accelerator", acc.models.join(" + "));
  set(info, "driver", acc.driver);
  set(info, "host", extra.host);

  const components: Record<string, string> = { ...probed };
  for (const [name, pinned] of Object.entries(pins)) {
    const actual = probed[name] ?? info[name];
    if (actual === undefined || actual === "unknown") {
      if (isProbedName(name)) {
        if (actual === undefined)
          warnings.push(`pin ${name}=${pinned} could not be probed on this machine; using the pinned value`);
        components[name] = pinned;
      } else {
        components[`pin.${name}`] = pinned;
      }
    } else {
      // A pinned informational part (accelerator, driver) is keyed: the user chose to split on it.
      components[name] = pinned;
      if (actual !== pinned) mismatches.push(`${name}: pinned ${pinned}, found ${actual}`);
    }
  }
  const sorted = sortKeys(components);
  return {
    components: sorted,
    info: sortKeys(info),
    stackId: stackIdOf(sorted),
    mismatches,
    errors,
    warnings,
  };
}

function sortKeys(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const PROBED_NAMES = new Set([
  "os",
  "arch",
  "python",
  "python-abi",
  "torch",
  "torch-npu",
  "triton",
  "triton-ascend",
  "triton-path",
  "pytorch-triton",
  "pytorch-triton-rocm",
  "pytorch-triton-xpu",
  "torch-cuda",
  "torch-hip",
  "cuda-arch",
  "accelerator",
  "driver",
  "host",
  "cann",
  "bishengir",
]);

function isProbedName(name: string): boolean {
  return PROBED_NAMES.has(name);
}

/** The canonical form: one `name=value` line per component, sorted by name. */
export function canonicalForm(components: Record<string, string>): string {
  return Object.keys(components)
    .sort()
    .map((k) => `${k}=${components[k]}\n`)
    .join("");
}

export function stackIdOf(components: Record<string, string>): string {
  return createHash("sha256").update(canonicalForm(components)).digest("hex").slice(0, 12);
}
