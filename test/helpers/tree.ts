import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** Every regular file under `root` (relative path -> sha256), skipping kcache's private folders. */
export function treeDigests(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const d of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (!rel && d.name.startsWith(".kcache-")) continue;
      if (d.isDirectory()) walk(r);
      else if (d.isFile())
        out.set(
          r,
          createHash("sha256")
            .update(fs.readFileSync(path.join(root, r)))
            .digest("hex"),
        );
    }
  };
  if (fs.existsSync(root)) walk("");
  return out;
}

/** Every group file under a Triton cache root with its parsed child paths. */
export function groupFiles(
  root: string,
): { entry: string; file: string; childPaths: Record<string, string> }[] {
  const out: { entry: string; file: string; childPaths: Record<string, string> }[] = [];
  for (const entry of fs.readdirSync(root)) {
    const dir = path.join(root, entry);
    if (!fs.statSync(dir).isDirectory() || entry.startsWith(".kcache-")) continue;
    for (const f of fs.readdirSync(dir)) {
      if (/^__grp__.+\.json$/.test(f)) {
        const parsed = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as {
          child_paths: Record<string, string>;
        };
        out.push({ entry, file: f, childPaths: parsed.child_paths });
      }
    }
  }
  return out;
}
