import fs from "node:fs";
import path from "node:path";

const GROUP = /^__grp__.+\.json$/;

/**
 * Every way a restored Triton cache differs from the cache it was saved from, entry by entry: a file
 * missing from a restored entry, bytes that differ, a group file whose child paths do not point at
 * the restored files. Entries absent from `restored` are not differences (a restore may skip them);
 * a half-present one is. Returns human-readable lines, empty when every present entry is whole.
 */
export function corruptEntries(source: string, restored: string): string[] {
  const out: string[] = [];
  if (!fs.existsSync(restored)) return out;
  for (const entry of fs.readdirSync(restored)) {
    if (entry.startsWith(".kcache-")) continue;
    const dst = path.join(restored, entry);
    if (!fs.statSync(dst).isDirectory()) continue;
    const src = path.join(source, entry);
    if (!fs.existsSync(src)) {
      out.push(`${entry}: not in the source cache`);
      continue;
    }
    const want = fs.readdirSync(src).sort();
    const got = fs.readdirSync(dst).sort();
    if (want.join("\n") !== got.join("\n")) {
      out.push(`${entry}: files ${got.join(",")} instead of ${want.join(",")}`);
      continue;
    }
    for (const f of want) {
      const a = fs.readFileSync(path.join(src, f));
      const b = fs.readFileSync(path.join(dst, f));
      if (GROUP.test(f)) {
        try {
          const cp = (JSON.parse(b.toString()) as { child_paths: Record<string, string> }).child_paths;
          const srcCp = (JSON.parse(a.toString()) as { child_paths: Record<string, string> }).child_paths;
          for (const [k, v] of Object.entries(srcCp)) {
            if (cp[k] !== path.join(dst, path.basename(v))) out.push(`${entry}/${f}: child ${k} -> ${cp[k]}`);
          }
        } catch {
          out.push(`${entry}/${f}: does not parse`);
        }
      } else if (!a.equals(b)) out.push(`${entry}/${f}: ${b.length} bytes differ from ${a.length}`);
    }
  }
  return out;
}

/** Names of the complete entries (folders) in a restored cache. */
export function entryNames(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .filter((e) => !e.startsWith(".kcache-") && fs.statSync(path.join(root, e)).isDirectory())
    .sort();
}
