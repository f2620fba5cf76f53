import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { keepAnswer, readKept, stateDir } from "../state-dir.js";
import { findOnPath } from "./python-probe.js";

export interface AcceleratorFacts {
  /** Distinct accelerator models, sorted ("NVIDIA H200", "Ascend910B3"). Informational. */
  models: string[];
  /** Driver version. Informational: no compile input. */
  driver: string | null;
  vendor: "nvidia" | "ascend" | null;
  /** CANN toolkit version on Ascend machines; null where none was found. */
  cann: string | null;
  /**
   * NVIDIA GPUs' compute capabilities, distinct and sorted ("9.0"): a key part, since compiled
   * kernels are for one architecture (Inductor's cache keys on it too). Absent where nvidia-smi
   * could not tell.
   */
  computeCapabilities?: string[];
  /** Where the CANN toolkit was found (its real path), for the bishengir lookup. */
  cannHome?: string | null;
}

export interface AcceleratorProbeRoots {
  /** Where the NVIDIA kernel module publishes its files (normally /proc/driver/nvidia). */
  nvidiaProc: string;
  /** Root of an Ascend installation (normally /usr/local/Ascend). */
  ascend: string;
  env: NodeJS.ProcessEnv;
}

/** Where the probe looks; $KCACHE_NVIDIA_PROC and $KCACHE_ASCEND_ROOT move them (containers that mount them elsewhere). */
export function probeRoots(env: NodeJS.ProcessEnv): AcceleratorProbeRoots {
  return {
    nvidiaProc: env.KCACHE_NVIDIA_PROC || "/proc/driver/nvidia",
    ascend: env.KCACHE_ASCEND_ROOT || "/usr/local/Ascend",
    env,
  };
}

/**
 * Finds the accelerator vendor, model and driver, and CANN on Ascend. Reads the drivers' files first
 * (instant), and only falls back to nvidia-smi / npu-smi, which can take a second, for the model.
 * On NVIDIA machines nvidia-smi is asked for the compute capability, which no driver file holds (it
 * runs beside the Python probe). Nothing keyed depends on npu-smi, which fails while another process
 * holds the card.
 */
export async function probeAccelerator(roots: AcceleratorProbeRoots): Promise<AcceleratorFacts> {
  const found: NvidiaFacts | null =
    (await nvidiaFromProc(roots.nvidiaProc)) ?? (await nvidiaFromSmi(roots.env));
  if (found) {
    const { seen, ...nvidia } = found;
    const caps = await nvidiaComputeCapabilities(roots.env, seen);
    return {
      ...nvidia,
      vendor: "nvidia",
      cann: null,
      cannHome: null,
      ...(caps ? { computeCapabilities: caps } : {}),
    };
  }
  const cann = findCann(roots);
  const ascend = await ascendFacts(roots, cann !== null);
  if (ascend || cann) {
    return {
      models: ascend?.models ?? [],
      driver: ascend?.driver ?? null,
      vendor: "ascend",
      cann: cann?.version ?? null,
      cannHome: cann?.home ?? null,
    };
  }
  return { models: [], driver: null, vendor: null, cann: null, cannHome: null };
}

/** The model and driver; `seen` is every driver file read (its text), which the capability cache keys on. */
interface NvidiaFacts {
  models: string[];
  driver: string | null;
  seen?: string;
}

/**
 * The NVIDIA kernel module's files: read synchronously, as every command's stack probe starts (a few
 * small files the kernel answers at once; each read through the thread pool cost a command's start
 * a round trip, ten on an eight-GPU machine).
 */
async function nvidiaFromProc(dir: string): Promise<NvidiaFacts | null> {
  const versionText = readOr(path.join(dir, "version"), null);
  if (versionText === null) return null;
  const driver = /Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)/.exec(versionText)?.[1] ?? null;
  const models = new Set<string>();
  let gpus: string[] = [];
  try {
    gpus = fs.readdirSync(path.join(dir, "gpus")).sort();
  } catch {}
  const seen = [versionText];
  for (const g of gpus) {
    const info = readOr(path.join(dir, "gpus", g, "information"), "");
    seen.push(g, info);
    const model = /^Model:\s*(.+)$/m.exec(info)?.[1]?.trim();
    if (model) models.add(model);
  }
  return { models: [...models].sort(), driver, seen: seen.join("\0") };
}

/** A driver's small text file, or `otherwise` where it cannot be read. */
function readOr<T>(file: string, otherwise: T): string | T {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return otherwise;
  }
}

/** Runs a tool with a timeout; null when it is missing or fails. */
export function runTool(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: 5000 }, (err, stdout) => resolve(err ? null : stdout));
  });
}

async function nvidiaFromSmi(
  env: NodeJS.ProcessEnv,
): Promise<{ models: string[]; driver: string | null } | null> {
  // No nvidia-smi on PATH: nothing to start (a failed spawn still costs milliseconds).
  const smi = findOnPath("nvidia-smi", env);
  if (!smi) return null;
  const out = await runTool(smi, ["--query-gpu=name,driver_version", "--format=csv,noheader"], env);
  if (!out?.trim()) return null;
  const rows = out
    .trim()
    .split("\n")
    .map((l) => l.split(",").map((s) => s.trim()));
  return {
    models: [...new Set(rows.map((r) => r[0] ?? ""))].filter(Boolean).sort(),
    driver: rows[0]?.[1] ?? null,
  };
}

/**
 * The GPUs' compute capabilities ("9.0"), from nvidia-smi; null when it is missing or says nothing
 * usable. nvidia-smi takes tens of milliseconds or more, on every command: its answer is kept in the
 * state folder and reused while the driver's files (`seen`: its version, each GPU's bus and model)
 * and nvidia-smi itself are unchanged. Where PATH has no nvidia-smi, none is started.
 */
async function nvidiaComputeCapabilities(env: NodeJS.ProcessEnv, seen?: string): Promise<string[] | null> {
  const smi = findOnPath("nvidia-smi", env);
  if (!smi) return null;
  const cache = seen === undefined ? null : capabilityCache(env, smi, seen);
  const kept = cache ? keptCapabilities(cache) : undefined;
  if (kept !== undefined) return kept;
  const out = await runTool(smi, ["--query-gpu=compute_cap", "--format=csv,noheader"], env);
  const found = (out ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => /^\d+\.\d+$/.test(l));
  const caps = found.length ? [...new Set(found)].sort() : null;
  // Only an answer is kept: a failed run (a busy or resetting GPU) is asked again next time.
  if (cache && caps) keepAnswer(cache, caps);
  return caps;
}

function capabilityCache(env: NodeJS.ProcessEnv, smi: string, seen: string): string | null {
  const st = fs.statSync(smi, { throwIfNoEntry: false, bigint: true });
  if (!st) return null;
  const id = createHash("sha256")
    .update(`${smi}\0${st.mtimeNs}\0${st.size}\0${seen}`)
    .digest("hex")
    .slice(0, 20);
  return path.join(stateDir(env), "accelerator-probe", `${id}.json`);
}

/** The kept capabilities, where they are a non-empty list of "9.0"s; else undefined (asked again). */
function keptCapabilities(file: string): string[] | undefined {
  const caps = readKept(file);
  return Array.isArray(caps) &&
    caps.length > 0 &&
    caps.every((c) => typeof c === "string" && /^\d+\.\d+$/.test(c))
    ? caps
    : undefined;
}

/**
 * The Ascend driver's version from driver/version.info. Newer drivers write `Version=7.35.23` (the
 * driver component) next to `package_version=26.0.rc1` (the release people name): the latter wins.
 */
export function ascendDriverVersion(text: string): string | null {
  return /^package_version\s*=\s*(\S+)/im.exec(text)?.[1] ?? /^Version\s*=\s*(\S+)/im.exec(text)?.[1] ?? null;
}

/** `npu-smi info -m` lists "NPU ID  Chip ID  Chip Logic ID  Chip Name" rows. */
export function npuSmiModels(out: string): string[] {
  const models = new Set<string>();
  for (const line of out.split("\n").slice(1)) {
    const cols = line.trim().split(/\s{2,}|\t+/);
    const name = cols[cols.length - 1];
    if (cols.length >= 4 && name && !/^mcu$/i.test(name)) models.add(name.replace(/\s+/g, ""));
  }
  return [...models].sort();
}

async function ascendFacts(
  roots: AcceleratorProbeRoots,
  hasCann: boolean,
): Promise<{ models: string[]; driver: string | null } | null> {
  const info = readOr(path.join(roots.ascend, "driver", "version.info"), null);
  const driver = info === null ? null : (ascendDriverVersion(info) ?? "unknown");
  // Neither an Ascend driver nor CANN: not an Ascend machine, and npu-smi need not be started.
  if (info === null && !hasCann) return null;
  const out = await runTool("npu-smi", ["info", "-m"], roots.env);
  const models = out ? npuSmiModels(out) : [];
  if (!driver && models.length === 0) return null;
  return { models, driver };
}

/**
 * The CANN toolkit: where set_env.sh points (ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH), else the
 * usual places (`ascend-toolkit/latest`, `cann`, the newest `cann-X.Y.Z`). Its version comes from
 * ascend_toolkit_install.info (beside the toolkit or in its `<arch>-linux` folder), else from the
 * folder's own name (`cann-9.0.0`).
 */
export function findCann(roots: AcceleratorProbeRoots): { version: string; home: string } | null {
  let versioned: string[] = [];
  try {
    versioned = fs
      .readdirSync(roots.ascend)
      .filter((n) => /^cann-\d+(\.\d+)*/.test(n))
      .sort((a, b) => b.localeCompare(a, undefined, { numeric: true }));
  } catch {
    // no Ascend root
  }
  const homes = [
    roots.env.ASCEND_TOOLKIT_HOME,
    roots.env.ASCEND_HOME_PATH,
    path.join(roots.ascend, "ascend-toolkit", "latest"),
    path.join(roots.ascend, "cann"),
    ...versioned.map((n) => path.join(roots.ascend, n)),
  ].filter((h): h is string => Boolean(h));
  for (const home of homes) {
    let real: string;
    try {
      real = fs.realpathSync(home);
    } catch {
      continue;
    }
    const version = installInfoVersion(real) ?? /^cann-(\d+(?:\.\d+)+\S*)$/.exec(path.basename(real))?.[1];
    if (version) return { version, home: real };
  }
  return null;
}

function installInfoVersion(home: string): string | null {
  let subdirs: string[] = [];
  try {
    subdirs = fs.readdirSync(home);
  } catch {
    return null;
  }
  for (const rel of ["", ...subdirs.filter((s) => s.endsWith("-linux"))]) {
    try {
      const text = fs.readFileSync(path.join(home, rel, "ascend_toolkit_install.info"), "utf8");
      const m = /^version\s*=\s*(\S+)/im.exec(text);
      if (m?.[1]) return m[1];
    } catch {
      // not here
    }
  }
  return null;
}
