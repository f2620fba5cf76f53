import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Strictness } from "../../src/cache/faults.js";
import { resolveConfig } from "../../src/config/load.js";
import { reportStack } from "../../src/job/build-context.js";
import { silentLog } from "../../src/log.js";
import { probeAccelerator } from "../../src/stack/accelerator-probe.js";
import { canonicalForm, fingerprintFrom, probeStack } from "../../src/stack/fingerprint.js";
import { probePython } from "../../src/stack/python-probe.js";
import { tempDir } from "../helpers/sandbox.js";
import { TEST_PYTHON } from "../helpers/test-stack.js";

const BUILD = path.resolve(import.meta.dirname, "../../build/src");

/** A site-packages folder holding only metadata, as pip leaves it, and torch/version.py. */
function fakeSitePackages(): string {
  const site = tempDir("site");
  const dist = (dir: string, file: string, name: string, version: string) => {
    fs.mkdirSync(path.join(site, dir), { recursive: true });
    fs.writeFileSync(
      path.join(site, dir, file),
      `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n\nlong text\n`,
    );
  };
  dist("torch-2.11.0+cu128.dist-info", "METADATA", "torch", "2.11.0+cu128");
  dist("triton-3.6.0.dist-info", "METADATA", "triton", "3.6.0");
  dist("torch_npu-2.7.1.dist-info", "METADATA", "torch-npu", "2.7.1");
  dist("numpy-2.0.0.dist-info", "METADATA", "numpy", "2.0.0");
  dist("triton_ascend-3.2.0.egg-info", "PKG-INFO", "triton-ascend", "3.2.0");
  fs.mkdirSync(path.join(site, "torch"));
  fs.writeFileSync(
    path.join(site, "torch", "version.py"),
    "from typing import Optional\n__version__ = '2.11.0+cu128'\ndebug = False\ncuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n",
  );
  // Importing torch must never happen: this one would fail loudly.
  fs.writeFileSync(path.join(site, "torch", "__init__.py"), "raise SystemExit('kcache imported torch')\n");
  return site;
}

describe("stack probe", () => {
  it("reads package versions and torch's CUDA version from metadata, without importing them", async () => {
    const site = fakeSitePackages();
    const facts = await probePython("python3", { PATH: process.env.PATH, PYTHONPATH: site });
    expect(facts.packages).toMatchObject({
      torch: "2.11.0+cu128",
      triton: "3.6.0",
      torch_npu: "2.7.1",
      triton_ascend: "3.2.0",
    });
    expect(facts.packages).not.toHaveProperty("numpy");
    expect(facts.torchCuda).toBe("12.8");
    expect(facts.torchHip).toBeNull();
    expect(facts.python).toMatch(/^3\.\d+\.\d+$/);
    expect(facts.abi).toMatch(/^cpython-3\d+/);
  });

  // The interpreters here: the one on PATH, and Debian's (whose site names dist-packages, not a venv's site-packages).
  const interpreters = [
    ...new Set(
      ["python3", "/usr/bin/python3"]
        .filter((p) => p === "python3" || fs.existsSync(p))
        .map((p) =>
          execFileSync(p, ["-c", "import os, sys; print(os.path.realpath(sys.executable))"], {
            encoding: "utf8",
          }).trim(),
        ),
    ),
  ];
  it.each(interpreters)(
    "finds the packages of a virtual environment (venv, uv) over %s, which Python's -S start leaves out",
    async (real) => {
      // A venv as `python3 -m venv` lays it out: pyvenv.cfg, bin/python3 linking the base interpreter,
      // lib/pythonX.Y/site-packages. Only its site-packages has torch and triton.
      const venv = tempDir("venv");
      const version = execFileSync(real, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], {
        encoding: "utf8",
      }).trim();
      fs.mkdirSync(path.join(venv, "bin"));
      fs.symlinkSync(real, path.join(venv, "bin", "python3"));
      fs.writeFileSync(
        path.join(venv, "pyvenv.cfg"),
        `home = ${path.dirname(real)}\ninclude-system-site-packages = false\nversion = ${version}\n`,
      );
      const site = path.join(venv, "lib", `python${version}`, "site-packages");
      fs.cpSync(fakeSitePackages(), site, { recursive: true });
      const facts = await probePython(path.join(venv, "bin", "python3"), {
        PATH: process.env.PATH,
        HOME: venv,
      });
      expect(facts.packages).toMatchObject({ torch: "2.11.0+cu128", triton: "3.6.0" });
      expect(facts.torchCuda).toBe("12.8");
      expect(facts.tritonDir).toBeNull();
    },
  );

  it("probes once per interpreter and inputs: a changed PYTHONPATH is probed again", async () => {
    const site = fakeSitePackages();
    const env = { PATH: process.env.PATH, PYTHONPATH: site };
    const a = probePython("python3", env);
    expect(probePython("python3", { ...env })).toBe(a);
    const other = await probePython("python3", { PATH: process.env.PATH, PYTHONPATH: tempDir("empty-site") });
    expect((await a).packages.torch).toBe("2.11.0+cu128");
    expect(other.packages.torch).toBeUndefined();
  });

  it("reuses its answer in later commands while nothing it read changed; an upgrade or a new interpreter is probed again", () => {
    const site = fakeSitePackages();
    const bin = tempDir("bin");
    const calls = path.join(bin, "calls.log");
    const real = execFileSync("sh", ["-c", "command -v python3"]).toString().trim();
    fs.writeFileSync(path.join(bin, "python3"), `#!/bin/sh\necho run >> ${calls}\nexec ${real} "$@"\n`, {
      mode: 0o755,
    });
    const env = {
      PATH: `${bin}:${process.env.PATH}`,
      PYTHONPATH: site,
      KCACHE_STATE_DIR: tempDir("state"),
    };
    // Each call is a new process, as restore, run and save of one job are.
    const probe = () =>
      JSON.parse(
        execFileSync(
          process.execPath,
          [
            "--input-type=module",
            "-e",
            `import { probePython } from ${JSON.stringify(path.join(BUILD, "stack/python-probe.js"))};
             console.log(JSON.stringify(await probePython("python3", process.env)));`,
          ],
          { env },
        ).toString(),
      ) as { packages: Record<string, string>; torchCuda: string };
    const runs = () => fs.readFileSync(calls, "utf8").trim().split("\n").length;
    expect(probe().packages.torch).toBe("2.11.0+cu128");
    expect(probe().packages.torch).toBe("2.11.0+cu128");
    expect(runs()).toBe(1);
    // pip install --upgrade torch: a new dist-info folder replaces the old one.
    fs.rmSync(path.join(site, "torch-2.11.0+cu128.dist-info"), { recursive: true });
    fs.mkdirSync(path.join(site, "torch-2.12.0.dist-info"));
    fs.writeFileSync(
      path.join(site, "torch-2.12.0.dist-info", "METADATA"),
      "Name: torch\nVersion: 2.12.0\n\n",
    );
    expect(probe().packages.torch).toBe("2.12.0");
    expect(runs()).toBe(2);
    // torch/version.py rewritten in place (its folder's listing unchanged).
    const version = path.join(site, "torch", "version.py");
    fs.writeFileSync(version, fs.readFileSync(version, "utf8").replace("'12.8'", "'13.0'"));
    fs.utimesSync(version, new Date(), new Date(Date.now() + 5000));
    expect(probe().torchCuda).toBe("13.0");
    expect(runs()).toBe(3);
    // Another interpreter first on PATH.
    const bin2 = tempDir("bin2");
    fs.copyFileSync(path.join(bin, "python3"), path.join(bin2, "python3"));
    fs.chmodSync(path.join(bin2, "python3"), 0o755);
    env.PATH = `${bin2}:${env.PATH}`;
    probe();
    expect(runs()).toBe(4);
  });

  it("reads the NVIDIA model and driver from the driver's /proc files", async () => {
    const proc = tempDir("proc");
    fs.writeFileSync(
      path.join(proc, "version"),
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  (dvs-builder@U16-I3-B03-4-3)\nGCC version:  gcc version 12.3.0\n",
    );
    for (const bus of ["0000:18:00.0", "0000:2a:00.0"]) {
      fs.mkdirSync(path.join(proc, "gpus", bus), { recursive: true });
      fs.writeFileSync(
        path.join(proc, "gpus", bus, "information"),
        "Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\n",
      );
    }
    const acc = await probeAccelerator({ nvidiaProc: proc, ascend: tempDir("none"), env: { PATH: "" } });
    expect(acc).toEqual({
      models: ["NVIDIA H200"],
      driver: "570.124.06",
      vendor: "nvidia",
      cann: null,
      cannHome: null,
    });
  });

  it("keys NVIDIA GPUs' compute capability (from nvidia-smi), not their model: an H100 and an H200 share kernels", async () => {
    const proc = tempDir("proc");
    fs.writeFileSync(
      path.join(proc, "version"),
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build\n",
    );
    const bin = tempDir("bin");
    fs.writeFileSync(
      path.join(bin, "nvidia-smi"),
      '#!/bin/sh\ncase "$*" in *compute_cap*) printf "9.0\\n9.0\\n" ;; *) echo "NVIDIA H200, 570.124.06" ;; esac\n',
      { mode: 0o755 },
    );
    const env = { PATH: bin, KCACHE_STATE_DIR: tempDir("state") };
    const acc = await probeAccelerator({ nvidiaProc: proc, ascend: tempDir("none"), env });
    expect(acc.computeCapabilities).toEqual(["9.0"]);
    const py = { ...TEST_PYTHON, torchCuda: "13.0" };
    const h200 = fingerprintFrom(py, acc, {});
    expect(h200.components["cuda-arch"]).toBe("9.0");
    expect(fingerprintFrom(py, { ...acc, models: ["NVIDIA H100 80GB HBM3"] }, {}).stackId).toBe(h200.stackId);
    expect(fingerprintFrom(py, { ...acc, computeCapabilities: ["10.0"] }, {}).stackId).not.toBe(h200.stackId);
  });

  it("asks nvidia-smi once: its answer is reused until the driver, the GPUs or nvidia-smi change, and none is started where PATH has none", async () => {
    const proc = tempDir("proc");
    const version = path.join(proc, "version");
    fs.writeFileSync(
      version,
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build\n",
    );
    fs.mkdirSync(path.join(proc, "gpus", "0000:19:00.0"), { recursive: true });
    fs.writeFileSync(path.join(proc, "gpus", "0000:19:00.0", "information"), "Model: \t\t NVIDIA H200\n");
    const bin = tempDir("bin");
    const calls = path.join(bin, "calls");
    const smi = (cap: string) =>
      fs.writeFileSync(
        path.join(bin, "nvidia-smi"),
        `#!/bin/sh\necho "$*" >> ${calls}\ncase "$*" in *compute_cap*) echo ${cap} ;; *) echo "NVIDIA H200, 570.124.06" ;; esac\n`,
        { mode: 0o755 },
      );
    smi("9.0");
    const env = { PATH: bin, KCACHE_STATE_DIR: tempDir("state") };
    const probe = () => probeAccelerator({ nvidiaProc: proc, ascend: tempDir("none"), env });
    const asked = () => (fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").trim().split("\n").length : 0);
    expect((await probe()).computeCapabilities).toEqual(["9.0"]);
    expect((await probe()).computeCapabilities).toEqual(["9.0"]);
    expect(asked()).toBe(1);
    // A new driver: asked again.
    fs.writeFileSync(
      version,
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.1  Release Build\n",
    );
    expect((await probe()).computeCapabilities).toEqual(["9.0"]);
    expect(asked()).toBe(2);
    // Another GPU in the machine: asked again.
    fs.mkdirSync(path.join(proc, "gpus", "0000:2a:00.0"), { recursive: true });
    fs.writeFileSync(path.join(proc, "gpus", "0000:2a:00.0", "information"), "Model: \t\t NVIDIA B200\n");
    expect((await probe()).computeCapabilities).toEqual(["9.0"]);
    expect(asked()).toBe(3);
    // nvidia-smi replaced (its size and time change): asked again, and its answer is the one used.
    smi("10.0");
    expect((await probe()).computeCapabilities).toEqual(["10.0"]);
    expect(asked()).toBe(4);
    // No nvidia-smi on PATH: nothing is started, and no capability is claimed.
    const none = await probeAccelerator({
      nvidiaProc: proc,
      ascend: tempDir("none"),
      env: { ...env, PATH: tempDir("empty") },
    });
    expect(none.computeCapabilities).toBeUndefined();
    expect(asked()).toBe(4);
  });

  it("reads the CANN version and Ascend driver from their install files", async () => {
    const ascend = tempDir("ascend");
    fs.mkdirSync(path.join(ascend, "driver"), { recursive: true });
    fs.writeFileSync(
      path.join(ascend, "driver", "version.info"),
      "Version=24.1.rc3\nascendhal_version=7.35.23\n",
    );
    const arch = path.join(ascend, "ascend-toolkit", "latest", "aarch64-linux");
    fs.mkdirSync(arch, { recursive: true });
    fs.writeFileSync(
      path.join(arch, "ascend_toolkit_install.info"),
      "package_name=Ascend-cann-toolkit\nversion=8.0.RC3\n",
    );
    const acc = await probeAccelerator({ nvidiaProc: tempDir("noproc"), ascend, env: { PATH: "" } });
    expect(acc).toMatchObject({ vendor: "ascend", driver: "24.1.rc3", cann: "8.0.RC3" });
  });

  it("gives one stack id per canonical form, and a new one when any component changes", () => {
    const acc = { models: ["NVIDIA H200"], driver: "570.124.06", vendor: "nvidia" as const, cann: null };
    const py = TEST_PYTHON;
    const a = fingerprintFrom(py, acc, { image: "ghcr.io/org/ci:2026.11" });
    expect(canonicalForm(a.components)).toBe(
      "arch=x86_64\nos=linux\npin.image=ghcr.io/org/ci:2026.11\npython=3.12.3\npython-abi=cpython-312-x86_64-linux-gnu\ntorch=2.11.0\ntorch-cuda=12.8\ntriton=3.6.0\n",
    );
    expect(a.info).toEqual({ accelerator: "NVIDIA H200", driver: "570.124.06" });
    expect(a.stackId).toMatch(/^[0-9a-f]{12}$/);
    expect(fingerprintFrom(py, acc, { image: "ghcr.io/org/ci:2026.11" }).stackId).toBe(a.stackId);
    expect(
      fingerprintFrom({ ...py, packages: { torch: "2.11.0", triton: "3.6.1" } }, acc, {}).stackId,
    ).not.toBe(fingerprintFrom(py, acc, {}).stackId);
    // The driver and the device model are no compile input: a runner pool on mixed drivers shares one key.
    expect(fingerprintFrom(py, { ...acc, driver: "580.1", models: ["NVIDIA H100"] }, {}).stackId).toBe(
      fingerprintFrom(py, acc, {}).stackId,
    );
    // Unless the user pins one: then it is keyed, and a disagreeing machine is a mismatch.
    const pinned = fingerprintFrom(py, { ...acc, driver: "580.1" }, { driver: "570.124.06" });
    expect(pinned.components.driver).toBe("570.124.06");
    expect(pinned.mismatches).toEqual(["driver: pinned 570.124.06, found 580.1"]);
  });

  it("warns when a pin disagrees with the probe, and fails with --strict", async () => {
    const site = fakeSitePackages();
    const env = {
      PATH: process.env.PATH,
      PYTHONPATH: site,
      HOME: tempDir("home"),
      GITHUB_SHA: "a".repeat(40),
    };
    const fp = await probeStack({ python: "python3", pins: { triton: "3.5.0" }, env });
    expect(fp.mismatches).toEqual(["triton: pinned 3.5.0, found 3.6.0"]);
    const config = resolveConfig(
      { caches: [{ name: "t", kind: "triton", path: "/tmp/t" }], stack: { pins: { triton: "3.5.0" } } },
      "/repo/kcache.yml",
      env,
      "/repo",
    );
    const log = silentLog();
    reportStack(config, fp, log, Strictness.none);
    expect(log.warnings.join("\n")).toMatch(
      /\/repo\/kcache\.yml: stack\.pins disagree .*triton: pinned 3\.5\.0, found 3\.6\.0/,
    );
    expect(() => reportStack(config, fp, log, Strictness.all)).toThrow(
      expect.objectContaining({ code: "EKCACHE_STACK", exitCode: 4 }),
    );
  });

  it("still forms a key when the interpreter is missing, reported as stack-incomplete (exit 4 under --strict)", async () => {
    const fp = await probeStack({ python: "/nonexistent/python3", pins: {}, env: { PATH: "" } });
    expect(fp.stackId).toMatch(/^[0-9a-f]{12}$/);
    expect(fp.errors.join("\n")).toMatch(/python probe failed \(\/nonexistent\/python3: not found\)/);
    const config = resolveConfig(
      { caches: [{ name: "t", kind: "triton", path: "/tmp/t" }] },
      "kcache.yml",
      {},
      "/",
    );
    expect(() => reportStack(config, fp, silentLog(), Strictness.all)).toThrow(
      expect.objectContaining({ code: "EKCACHE_STACK", exitCode: 4 }),
    );
  });

  it("says how a failing interpreter ended, in one line, never the probe script", async () => {
    const dir = tempDir("bad-python");
    const python = path.join(dir, "python3");
    fs.writeFileSync(python, "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    const fp = await probeStack({ python, pins: {}, env: { PATH: process.env.PATH } });
    const warning = fp.errors.join("\n");
    expect(warning).toContain(`python probe failed (${python}: exited 3)`);
    expect(warning).not.toContain("import json");
  });
});
