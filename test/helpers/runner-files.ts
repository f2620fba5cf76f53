import fs from "node:fs";

/**
 * Reads a $GITHUB_OUTPUT, $GITHUB_ENV or $GITHUB_STATE file as the runner does: `name=value` lines and
 * `name<<delimiter` … `delimiter` blocks (what @actions/core writes). A missing file reads as empty.
 */
export function readCommandFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!fs.existsSync(file)) return out;
  const lines = fs.readFileSync(file, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const m = /^([^=<]+)<<(.+)$/.exec(line);
    if (m) {
      const value: string[] = [];
      while (++i < lines.length && lines[i] !== m[2]) value.push(lines[i] as string);
      out[m[1] as string] = value.join("\n");
    } else if (line.includes("=")) {
      const [k, ...v] = line.split("=");
      out[k as string] = v.join("=");
    }
  }
  return out;
}
