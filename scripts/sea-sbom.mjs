// The single executable's bill of materials (scripts/build-sea.mjs): every npm package esbuild put
// into its bundles, read from the bundles' metafiles, with the version and license each package.json
// declares, plus the Node.js runtime it runs on; as CycloneDX 1.5 JSON, and the license texts those
// licenses ask to be passed on, in one notices file.
import fs from "node:fs";
import path from "node:path";

/** The package folders (…/node_modules/<name> or …/node_modules/@scope/<name>) a metafile's inputs lie in. */
export function bundledPackageDirs(metafiles) {
  const dirs = new Set();
  for (const meta of metafiles)
    for (const input of Object.keys(meta.inputs)) {
      // The innermost node_modules: a package's own copy of a dependency is a package of its own.
      const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.replaceAll("\\", "/"));
      if (m) dirs.add(m[1]);
    }
  return [...dirs];
}

/** A package.json's license as SPDX: `license`, else the old `licenses` array, else "NOASSERTION". */
function licenseOf(pkg) {
  if (typeof pkg.license === "string") return pkg.license;
  if (pkg.license?.type) return pkg.license.type;
  const list = (pkg.licenses ?? []).map((l) => l.type ?? l).filter(Boolean);
  return list.length === 1 ? list[0] : list.length ? `(${list.join(" OR ")})` : "NOASSERTION";
}

const SPDX_ID = /^[A-Za-z0-9.+-]+$/;
const licenseEntry = (spdx) => (SPDX_ID.test(spdx) ? { license: { id: spdx } } : { expression: spdx });
const purl = (name, version) => `pkg:npm/${name.replace(/^@/, "%40")}@${version}`;

/**
 * The packages in `dirs` (relative to `cwd`), each once by name and version, sorted: name, version,
 * license, and the text of its LICENSE file where it has one.
 */
export function bundledPackages(dirs, cwd = process.cwd()) {
  const byId = new Map();
  for (const dir of dirs) {
    const abs = path.resolve(cwd, dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(abs, "package.json"), "utf8"));
    // Some packages put a package.json of their own in a subfolder (type: module): the one with a version.
    if (!pkg.name || !pkg.version) continue;
    const file = fs.readdirSync(abs).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    const text = file ? fs.readFileSync(path.join(abs, file), "utf8") : null;
    byId.set(`${pkg.name}@${pkg.version}`, {
      name: pkg.name,
      version: pkg.version,
      license: licenseOf(pkg),
      text,
    });
  }
  return [...byId.values()].sort(
    (a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version),
  );
}

/**
 * The CycloneDX document for kcache `version` (license `license`) on Node.js `nodeVersion`, for
 * `arch`, bundling `packages`. No timestamp or serial number: the same build gives the same file.
 */
export function cycloneDx({ version, license, arch, nodeVersion, packages }) {
  return {
    bomFormat: "CycloneDX",
    specVersion: "1.5",
    version: 1,
    metadata: {
      tools: [{ name: "kcache scripts/build-sea.mjs" }],
      component: {
        type: "application",
        name: "kcache",
        version,
        description: `kcache's single executable for linux-${arch}`,
        licenses: [licenseEntry(license)],
        purl: purl("kcache", version),
      },
    },
    components: [
      {
        type: "platform",
        name: "node",
        version: nodeVersion.replace(/^v/, ""),
        description: `the Node.js runtime (linux-${arch}) the executable is built on; its own third-party licenses are in its LICENSE`,
        licenses: [licenseEntry("MIT")],
        purl: `pkg:generic/node@${nodeVersion.replace(/^v/, "")}?arch=${arch}`,
      },
      ...packages.map((p) => ({
        type: "library",
        name: p.name,
        version: p.version,
        licenses: [licenseEntry(p.license)],
        purl: purl(p.name, p.version),
      })),
    ],
  };
}

/** The license texts of `packages` (those without a LICENSE file named by their license alone), one after another. */
export function noticesText(packages) {
  return packages
    .map((p) => {
      const head = `${p.name} ${p.version} (${p.license})`;
      return `${head}\n${"=".repeat(head.length)}\n\n${p.text?.trim() ?? `No license file; package.json says ${p.license}.`}\n`;
    })
    .join("\n\n");
}
