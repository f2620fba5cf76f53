import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeFakeAscend } from "../../demo/sim/ascend-toolkit.js";
import { Strictness } from "../../src/cache/faults.js";
import { resolveConfig } from "../../src/config/load.js";
import { reportStack } from "../../src/job/build-context.js";
import { silentLog } from "../../src/log.js";
import {
  ascendDriverVersion,
  findCann,
  npuSmiModels,
  probeAccelerator,
} from "../../src/stack/accelerator-probe.js";
import { probeStack } from "../../src/stack/fingerprint.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

/** `npu-smi info -m` on an 8-card Atlas 800T A2, as it prints it (an MCU row per board). */
const NPU_SMI_M = `        NPU ID                         Chip ID                        Chip Logic ID                  Chip Name
        0                              0                              0                              Ascend 910B3
        0                              1                              -                              Mcu
        1                              0                              1                              Ascend 910B3
        2                              0                              2                              Ascend 910B3
`;

/** A bin folder with an npu-smi that answers as above, or fails as it does while a process holds the card. */
function fakeNpuSmi(busy: boolean): string {
  const bin = tempDir("bin");
  const script = busy
    ? "#!/bin/sh\necho 'dcmi model initialized failed, because the device is used. ret is -8020' >&2\nexit 255\n"
    : `#!/bin/sh\ncat <<'OUT'\n${NPU_SMI_M}OUT\n`;
  fs.writeFileSync(path.join(bin, "npu-smi"), script);
  fs.chmodSync(path.join(bin, "npu-smi"), 0o755);
  return bin;
}

/** A site-packages folder of an Ascend CI image: torch (CPU build), torch_npu, triton-ascend with its bishengir. */
function ascendSitePackages(): string {
  const site = tempDir("site");
  const dist = (dir: string, name: string, version: string) => {
    fs.mkdirSync(path.join(site, dir), { recursive: true });
    fs.writeFileSync(
      path.join(site, dir, "METADATA"),
      `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n\n`,
    );
  };
  dist("torch-2.10.0.dist-info", "torch", "2.10.0");
  dist("torch_npu-2.10.0.post7.dist-info", "torch-npu", "2.10.0.post7");
  dist("triton_ascend-3.2.1.dist-info", "triton-ascend", "3.2.1");
  fs.mkdirSync(path.join(site, "torch"));
  fs.writeFileSync(
    path.join(site, "torch", "version.py"),
    "__version__ = '2.10.0'\ncuda = None\nhip = None\n",
  );
  const bishengir = path.join(site, "triton", "_C", "bishengir", "bishengir-compile");
  fs.mkdirSync(path.dirname(bishengir), { recursive: true });
  fs.writeFileSync(bishengir, "#!/bin/sh\necho 'bishengir-compile 0.1.0 (triton-ascend 3.2.1 wheel)'\n");
  fs.chmodSync(bishengir, 0o755);
  return site;
}

describe("the Ascend stack probe", () => {
  it("reads both forms of the driver's version.info, preferring package_version", () => {
    expect(ascendDriverVersion("Version=24.1.rc3\nascendhal_version=7.35.23\n")).toBe("24.1.rc3");
    expect(ascendDriverVersion("Version=7.35.23\npackage_version=26.0.rc1\ninnerversion=V100R001C26\n")).toBe(
      "26.0.rc1",
    );
  });

  it("reads the models from npu-smi info -m, leaving out the MCU", () => {
    expect(npuSmiModels(NPU_SMI_M)).toEqual(["Ascend910B3"]);
  });

  it("finds CANN 9.x at cann-X.Y.Z through latest -> cann -> cann-9.0.0, with or without set_env.sh", async () => {
    const fake = makeFakeAscend(tempDir("Ascend"), "9.0.0");
    const real = fs.realpathSync(fake.toolkit);
    expect(findCann({ nvidiaProc: "/nonexistent", ascend: fake.root, env: {} })).toEqual({
      version: "9.0.0",
      home: real,
    });
    // What set_env.sh exports wins over the usual places.
    const other = makeFakeAscend(tempDir("Ascend2"), "9.1.0");
    const viaEnv = findCann({
      nvidiaProc: "/nonexistent",
      ascend: fake.root,
      env: { ASCEND_TOOLKIT_HOME: path.join(other.root, "ascend-toolkit", "latest") },
    });
    expect(viaEnv?.version).toBe("9.1.0");
    // With no install info, the folder's own name tells.
    fs.rmSync(path.join(real, process.arch === "arm64" ? "aarch64-linux" : "x86_64-linux"), {
      recursive: true,
    });
    expect(findCann({ nvidiaProc: "/nonexistent", ascend: fake.root, env: {} })?.version).toBe("9.0.0");
    const acc = await probeAccelerator({ nvidiaProc: "/nonexistent", ascend: fake.root, env: { PATH: "" } });
    expect(acc).toMatchObject({ vendor: "ascend", driver: "26.0.rc1", cann: "9.0.0", models: [] });
  });

  it("keeps the stack id when npu-smi fails because another process holds the card", async () => {
    const fake = makeFakeAscend(tempDir("Ascend"));
    const site = ascendSitePackages();
    const probe = (bin: string) =>
      probeStack({
        python: "python3",
        pins: {},
        env: { PATH: `${bin}:${process.env.PATH}`, PYTHONPATH: site, KCACHE_ASCEND_ROOT: fake.root },
        accelerator: {
          nvidiaProc: "/nonexistent",
          ascend: fake.root,
          env: { PATH: `${bin}:${process.env.PATH}` },
        },
      });
    const free = await probe(fakeNpuSmi(false));
    const busy = await probe(fakeNpuSmi(true));
    expect(free.info.accelerator).toBe("Ascend910B3");
    expect(busy.info.accelerator).toBeUndefined();
    expect(busy.stackId).toBe(free.stackId);
  });

  it("makes a missing CANN on a machine with an Ascend driver an error: a warning, or exit 4 under --strict", async () => {
    const root = tempDir("Ascend");
    fs.mkdirSync(path.join(root, "driver"));
    fs.writeFileSync(
      path.join(root, "driver", "version.info"),
      "Version=7.35.23\npackage_version=26.0.rc1\n",
    );
    const fp = await probeStack({
      python: "python3",
      pins: {},
      env: { PATH: process.env.PATH },
      accelerator: { nvidiaProc: "/nonexistent", ascend: root, env: { PATH: "" } },
    });
    expect(fp.components.cann).toBe("unknown");
    expect(fp.errors.join("\n")).toMatch(/Ascend driver but no CANN toolkit was found/);
    const config = resolveConfig(
      { caches: [{ name: "t", kind: "triton", path: "/tmp/t" }] },
      "kcache.yml",
      {},
      "/",
    );
    const log = silentLog();
    reportStack(config, fp, log, Strictness.none);
    expect(log.warnings.join("\n")).toMatch(/no CANN toolkit was found/);
    expect(() => reportStack(config, fp, log, Strictness.all)).toThrow(
      expect.objectContaining({ code: "EKCACHE_STACK", exitCode: 4 }),
    );
  });
});

describe("kcache stack on an Ascend machine (probe fixtures)", () => {
  it("prints the key parts and the informational parts, marked; codegen variables are keyed", async () => {
    const fake = makeFakeAscend(tempDir("Ascend"));
    const site = ascendSitePackages();
    const dir = tempDir("project");
    const env = {
      PATH: `${fakeNpuSmi(false)}:${process.env.PATH}`,
      HOME: dir,
      PYTHONPATH: site,
      KCACHE_ASCEND_ROOT: fake.root,
      KCACHE_NVIDIA_PROC: "/nonexistent",
    };
    const r = await runCli(["stack"], { env, cwd: dir });
    expect(r.code).toBe(0);
    const id = /^stack ([0-9a-f]{12}) \(from the key parts\)$/m.exec(r.stdout)?.[1];
    expect(id).toBeDefined();
    expect(r.stdout).toMatch(/^ {2}key {3}cann\s+9\.0\.0$/m);
    expect(r.stdout).toMatch(/^ {2}key {3}torch-npu\s+2\.10\.0\.post7$/m);
    expect(r.stdout).toMatch(/^ {2}key {3}triton-ascend\s+3\.2\.1$/m);
    expect(r.stdout).toMatch(
      /^ {2}key {3}bishengir\s+bishengir-compile 0\.1\.0 \(triton-ascend 3\.2\.1 wheel\)$/m,
    );
    expect(r.stdout).toContain(`key   triton-path`);
    expect(r.stdout).toContain(path.join(site, "triton"));
    expect(r.stdout).toMatch(/^ {2}info {2}accelerator\s+Ascend910B3$/m);
    expect(r.stdout).toMatch(/^ {2}info {2}driver\s+26\.0\.rc1$/m);
    expect(r.stdout).toMatch(/^ {2}info {2}host\s+\S+$/m);
    expect(r.stdout).not.toMatch(/key\s+(driver|accelerator)/);

    const sanitized = await runCli(["stack", "--json"], {
      env: { ...env, TRITON_ENABLE_SANITIZER: "1" },
      cwd: dir,
    });
    const j = JSON.parse(sanitized.stdout) as { stackId: string; components: Record<string, string> };
    expect(j.components["env.TRITON_ENABLE_SANITIZER"]).toBe("1");
    expect(j.stackId).not.toBe(id);
  });
});
