import fs from "node:fs";
import path from "node:path";

/**
 * What `pip install` leaves for kcache's stack probe to read: a dist-info folder per package (the
 * probe reads their METADATA and never imports them). The demo's simulated Triton is on PYTHONPATH
 * for the workload; this makes the job's stack look installed to kcache too, as after a real
 * install step: torch and Triton, or on the simulated Ascend torch_npu and Triton-Ascend.
 */
export function installPackages(dir: string, packages: Record<string, string>): string {
  for (const [name, version] of Object.entries(packages)) {
    const info = path.join(dir, `${name}-${version}.dist-info`);
    fs.mkdirSync(info, { recursive: true });
    fs.writeFileSync(
      path.join(info, "METADATA"),
      `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n\n`,
    );
  }
  return dir;
}
