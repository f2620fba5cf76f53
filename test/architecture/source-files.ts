import fs from "node:fs";
import path from "node:path";

export const SRC = path.resolve(import.meta.dirname, "../../src");

/** Every .ts file under src/, as a path relative to src/ and its text. */
export function srcFiles(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts"))
        out.push({ file: path.relative(SRC, p), text: fs.readFileSync(p, "utf8") });
    }
  };
  walk(SRC);
  return out;
}

/** The top-level folders of src/ ("." for the files at its top). */
export function srcFolders(): string[] {
  return [
    ".",
    ...fs
      .readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name),
  ];
}
