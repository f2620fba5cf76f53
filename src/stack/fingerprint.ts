import { createHash } from "node:crypto";
import {
  type AcceleratorFacts,
  type AcceleratorProbeRoots,
  DEFAULT_ROOTS,
  probeAccelerator,
} from "./accelerator-probe.js";
import { type PythonFacts, probePython } from "./python-probe.js";

/** The software stack as readable name/value pairs, and the short id that goes into keys. */
export interface StackFingerprint {
  /** Sorted, readable components: os, arch, python, torch, triton, accelerator, driver, pin.image... */
  components: Record<string, string>;
  /** 12 hex digits of sha256 over the canonical form. */
  stackId: string;
  /** Pins that disagree with the probe, one line each. */
  mismatches: string[];
  /** What could not be probed (no python, say): the fingerprint still forms, with a warning. */
  warnings: string[];
}

export interface StackProbeOptions {
  python: string;
  pins: Record<string, string>;
  env?: NodeJS.ProcessEnv;
  accelerator?: AcceleratorProbeRoots;
}

/** Probes Python packages and the accelerator in parallel and forms the fingerprint. */
export async function probeStack(opts: StackProbeOptions): Promise<StackFingerprint> {
  const env = opts.env ?? process.env;
  const warnings: string[] = [];
  const [py, acc] = await Promise.all([
    probePython(opts.python, env).catch((e: Error) => {
      warnings.push(`python probe failed (${e.message}); the stack key has no Python packages in it`);
      return null;
    }),
    probeAccelerator(opts.accelerator ?? { ...DEFAULT_ROOTS, env }),
  ]);
  return fingerprintFrom(py, acc, opts.pins, warnings);
}

/** Forms the fingerprint from probe results; pure, so tests can feed it facts. */
export function fingerprintFrom(
  py: PythonFacts | null,
  acc: AcceleratorFacts,
  pins: Record<string, string>,
  warnings: string[] = [],
): StackFingerprint {
  const probed: Record<string, string> = {};
  const set = (k: string, v: string | null | undefined) => {
    if (v) probed[k] = v;
  };
  if (py) {
    set("os", py.system);
    set("arch", py.machine);
    set("python", `${py.python}`);
    set("python-abi", py.abi || py.implementation);
    for (const [name, version] of Object.entries(py.packages)) set(name.replace(/_/g, "-"), version);
    set("torch-cuda", py.torchCuda);
    set("torch-hip", py.torchHip);
  } else {
    set("os", process.platform);
    set("arch", process.arch);
  }
  if (acc.models.length) set("accelerator", acc.models.join(" + "));
  set("driver", acc.driver);
  set("cann", acc.cann);

  const mismatches: string[] = [];
  const components: Record<string, string> = { ...probed };
  for (const [name, pinned] of Object.entries(pins)) {
    const actual = probed[name];
    if (actual === undefined) {
      if (isProbedName(name)) {
        warnings.push(`pin ${name}=${pinned} could not be probed on this machine; using the pinned value`);
        components[name] = pinned;
      } else {
        components[`pin.${name}`] = pinned;
      }
    } else if (actual !== pinned) {
      mismatches.push(`${name}: pinned ${pinned}, found ${actual}`);
    }
  }
  const sorted = Object.fromEntries(
    Object.entries(components).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  return { components: sorted, stackId: stackIdOf(sorted), mismatches, warnings };
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
  "pytorch-triton",
  "pytorch-triton-rocm",
  "pytorch-triton-xpu",
  "torch-cuda",
  "torch-hip",
  "accelerator",
  "driver",
  "cann",
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
