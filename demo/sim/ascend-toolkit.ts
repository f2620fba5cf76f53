/**
 * A stand-in for an Ascend machine's software under /usr/local/Ascend, as CANN 9.x lays it out:
 * `cann-X.Y.Z/` with `cann -> cann-X.Y.Z` and `ascend-toolkit/latest -> ../cann`, the toolkit's
 * `set_env.sh` (which Triton-Ascend needs sourced: it reads ASCEND_HOME_PATH), headers, a
 * `bishengir-compile` that answers --version, and the driver's version.info in its newer two-version
 * form. The simulated Triton-Ascend (demo/sim, TRITON_SIM_BACKEND=ascend) builds its precompiled
 * header from these headers.
 */
import fs from "node:fs";
import path from "node:path";

export interface FakeAscend {
  /** Plays /usr/local/Ascend. */
  root: string;
  /** ascend-toolkit/set_env.sh, the script CI sources. */
  setEnv: string;
  /** The real folder of the toolkit (cann-X.Y.Z). */
  toolkit: string;
  /** Rewrites the headers (new mtimes), as reinstalling the toolkit or torch_npu does. */
  reinstallHeaders(): void;
}

export function makeFakeAscend(root: string, cann = "9.0.0"): FakeAscend {
  const toolkit = path.join(root, `cann-${cann}`);
  const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
  fs.mkdirSync(path.join(toolkit, `${arch}-linux`), { recursive: true });
  fs.writeFileSync(
    path.join(toolkit, `${arch}-linux`, "ascend_toolkit_install.info"),
    `package_name=Ascend-cann-toolkit\nversion=${cann}\ninnerversion=V100R001C${cann.replace(/\./g, "")}\narch=${arch}\nos=linux\npath=${toolkit}/${arch}-linux\n`,
  );
  fs.mkdirSync(path.join(toolkit, "bin"), { recursive: true });
  const bishengir = path.join(toolkit, "bin", "bishengir-compile");
  fs.writeFileSync(
    bishengir,
    `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "bishengir-compile version ${cann} (simulated)"; exit 0; fi\nexit 1\n`,
  );
  fs.chmodSync(bishengir, 0o755);
  fs.symlinkSync(`cann-${cann}`, path.join(root, "cann"));
  fs.mkdirSync(path.join(root, "ascend-toolkit"), { recursive: true });
  fs.symlinkSync("../cann", path.join(root, "ascend-toolkit", "latest"));
  const setEnv = path.join(root, "ascend-toolkit", "set_env.sh");
  fs.writeFileSync(
    setEnv,
    [
      "# Simulated CANN set_env.sh",
      `export ASCEND_TOOLKIT_HOME=${path.join(root, "ascend-toolkit", "latest")}`,
      "export ASCEND_HOME_PATH=${ASCEND_TOOLKIT_HOME}",
      "export PATH=${ASCEND_TOOLKIT_HOME}/bin:${PATH}",
      "export LD_LIBRARY_PATH=${ASCEND_TOOLKIT_HOME}/lib64:${LD_LIBRARY_PATH}",
      "",
    ].join("\n"),
  );
  fs.mkdirSync(path.join(root, "driver"), { recursive: true });
  fs.writeFileSync(path.join(root, "driver", "version.info"), "Version=7.35.23\npackage_version=26.0.rc1\n");
  const reinstallHeaders = () => {
    for (const [rel, text] of [
      ["include/acl/acl.h", "// acl.h (simulated)\n"],
      ["include/runtime/rt.h", "// rt.h (simulated)\n"],
    ] as const) {
      const file = path.join(toolkit, rel);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.rmSync(file, { force: true });
      fs.writeFileSync(file, text);
      // A reinstall writes the same bytes at a later time.
      const later = new Date(Date.now() + Math.floor(Math.random() * 1000) * 1000);
      fs.utimesSync(file, later, later);
    }
  };
  reinstallHeaders();
  return { root, setEnv, toolkit, reinstallHeaders };
}
