import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const BENCHMARKS = fs.readFileSync(path.join(ROOT, "BENCHMARKS.md"), "utf8");

/** The README's paragraphs and list items, with each measured figure in them (seconds, ratios, shares). */
const FIGURE = /\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?(?: s|x|%)(?=[\s,;:).]|$)/g;
const paragraphs = README.split(/\n(?=\s*\n|- |```)/).filter((p) => !p.trimStart().startsWith("```"));

describe("every figure in the README has a source a reader can find", () => {
  const withFigures = paragraphs
    .map((p) => ({ text: p.trim(), figures: [...p.matchAll(FIGURE)].map((m) => m[0]) }))
    // The demo's simulated compile time is a setting it is run with, not a measurement.
    .filter((p) => p.figures.length > 0 && !p.text.startsWith("The demo is a **simulation**"));

  it("finds the README's figures", () => expect(withFigures.length).toBeGreaterThanOrEqual(3));

  it.each(withFigures)("$figures", ({ text, figures }) => {
    expect(text, "the paragraph links the page its figures come from").toMatch(/\(BENCHMARKS\.md\)/);
    for (const f of figures) {
      // A range's ends each appear in BENCHMARKS.md ("0.85-1.22x": 0.85x and 1.22x).
      const unit = f.endsWith(" s") ? " s" : f.slice(-1);
      for (const end of f.slice(0, -unit.length).split("-"))
        expect(BENCHMARKS, `${f}: ${end}${unit} is in BENCHMARKS.md`).toContain(`${end}${unit}`);
    }
  });
});
