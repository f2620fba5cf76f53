import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const pages = [
  "README.md",
  "BENCHMARKS.md",
  "RELIABILITY.md",
  ...fs.readdirSync(path.join(ROOT, "docs")).map((f) => `docs/${f}`),
];

describe("the documentation", () => {
  it("keeps the README a guide a newcomer reads in minutes (under 12 KB), with the references in docs/", () => {
    expect(fs.statSync(path.join(ROOT, "README.md")).size).toBeLessThan(12 * 1024);
  });

  it("never runs kcache through npx or npm exec while the README says it is not on the npm registry", () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    if (!/kcache is not on the npm registry/.test(readme)) return;
    // npx fetches an unknown name from the registry: someone else's package, run on the user's runner.
    const fetching = /\b(?:npx|npm exec|pnpm dlx|yarn dlx) (?:-[-\w]+ )*kcache\b/;
    const runs = pages.flatMap((page) =>
      fs
        .readFileSync(path.join(ROOT, page), "utf8")
        .split("\n")
        .filter((l) => fetching.test(l))
        .map((l) => `${page}: ${l.trim()}`),
    );
    expect(runs).toEqual([]);
  });

  it("has no relative link to a file that does not exist", () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = fs.readFileSync(path.join(ROOT, page), "utf8");
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        if (!fs.existsSync(path.resolve(ROOT, path.dirname(page), target))) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
