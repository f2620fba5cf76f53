import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface AcceleratorFacts {
  /** Distinct accelerator models, sorted ("NVIDIA H200", "Ascend910B3"). */
  models: string[];
  driver: string | null;
  vendor: "nvidia" | "ascend" | null;
  /** CANN toolkit version on Ascend machines. */
  cann: string | null;
}

export interface AcceleratorProbeRoots {
  /** Where the NVIDIA kernel module publishes its files (normally /proc/driver/nvidia). */
  nvidiaProc: string;
  /** Root of an Ascend installation (normally /usr/local/Ascend). */
  ascend: string;
  env: NodeJS.ProcessEnv;
}

export const DEFAULT_ROOTS: AcceleratorProbeRoots = {
  nvidiaProc: "/proc/driver/nvidia",
  ascend: "/usr/local/Ascend",
  env: process.env,
};

/**
 * Finds the accelerator model and driver. Reads the driver's /proc files first (instant), and only
 * falls back to nvidia-smi / npu-smi, which can take a second, when those files are absent.
 */
export async function probeAccelerator(
  roots: AcceleratorProbeRoots = DEFAULT_ROOTS,
): Promise<AcceleratorFacts> {
  const nvidia = (await nvidiaFromProc(roots.nvidiaProc)) ?? (await nvidiaFromSmi(roots.env));
  if (nvidia) return { ...nvidia, vendor: "nvidia", cann: null };
  const cann = cannVersion(roots);
  const ascend = await ascendFacts(roots);
  if (ascend || cann) {
    return { models: ascend?.models ?? [], driver: ascend?.driver ?? null, vendor: "ascend", cann };
  }
  return { models: [], driver: null, vendor: null, cann: null };
}

async function nvidiaFromProc(dir: string): Promise<{ models: string[]; driver: string | null } | null> {
  let versionText: string;
  try {
    versionText = await fs.promises.readFile(path.join(dir, "version"), "utf8");
  } catch {
    return null;
  }
  const driver = /Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)/.exec(versionText)?.[1] ?? null;
  const models = new Set<string>();
  const gpus = await fs.promises.readdir(path.join(dir, "gpus")).catch(() => [] as string[]);
  for (const g of gpus) {
    const info = await fs.promises.readFile(path.join(dir, "gpus", g, "information"), "utf8").catch(() => "");
    const model = /^Model:\s*(.+)$/m.exec(info)?.[1]?.trim();
    if (model) models.add(model);
  }
  return { models: [...models].sort(), driver };
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: 5000 }, (err, stdout) => resolve(err ? null : stdout));
  });
}

async function nvidiaFromSmi(
  env: NodeJS.ProcessEnv,
): Promise<{ models: string[]; driver: string | null } | null> {
  const out = await run("nvidia-smi", ["--query-gpu=name,driver_version", "--format=csv,noheader"], env);
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

async function ascendFacts(
  roots: AcceleratorProbeRoots,
): Promise<{ models: string[]; driver: string | null } | null> {
  const info = await fs.promises
    .readFile(path.join(roots.ascend, "driver", "version.info"), "utf8")
    .catch(() => null);
  const driver = info ? (/^Version\s*=\s*(\S+)/im.exec(info)?.[1] ?? null) : null;
  // `npu-smi info -m` lists "NPU ID  Chip ID  Chip Logic ID  Chip Name" rows.
  const out = await run("npu-smi", ["info", "-m"], roots.env);
  const models = new Set<string>();
  for (const line of out?.split("\n").slice(1) ?? []) {
    const cols = line.trim().split(/\s{2,}|\t+/);
    const name = cols[cols.length - 1];
    if (cols.length >= 4 && name && !/^mcu$/i.test(name)) models.add(name.replace(/\s+/g, ""));
  }
  if (!driver && models.size === 0) return null;
  return { models: [...models].sort(), driver };
}

/** The CANN toolkit version from its install info file, where the toolkit's set_env.sh points. */
function cannVersion(roots: AcceleratorProbeRoots): string | null {
  const homes = [
    roots.env.ASCEND_TOOLKIT_HOME,
    roots.env.ASCEND_HOME_PATH,
    path.join(roots.ascend, "ascend-toolkit", "latest"),
    path.join(roots.ascend, "cann"),
  ].filter((h): h is string => Boolean(h));
  for (const home of homes) {
    let subdirs: string[];
    try {
      subdirs = fs.readdirSync(home);
    } catch {
      continue;
    }
    for (const sub of subdirs) {
      const file = path.join(home, sub, "ascend_toolkit_install.info");
      try {
        const m = /^version\s*=\s*(\S+)/im.exec(fs.readFileSync(file, "utf8"));
        if (m?.[1]) return m[1];
      } catch {
        // not this architecture's folder
      }
    }
  }
  return null;
}
