import { describe, expect, it } from "vitest";
import { transferProgress } from "../src/progress.js";

function sink(isTTY: boolean) {
  const out: string[] = [];
  return { isTTY, out, write: (s: string) => out.push(s) };
}
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits until `ok` holds (a timer fired), however late a loaded machine runs timers. */
async function until(ok: () => boolean): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > 120_000) throw new Error("the progress timer never fired");
    await wait(5);
  }
}

describe("transfer progress", () => {
  it("prints nothing for a transfer quicker than the threshold", async () => {
    const s = sink(true);
    const p = transferProgress("restoring", 1000, {
      stream: s,
      startAfterMs: 10_000,
      ttyIntervalMs: 5,
      logIntervalMs: 5,
    });
    p.add(500);
    await wait(30);
    p.done();
    expect(s.out).toEqual([]);
  });

  it("redraws a bar in place on a terminal and ends the line when done", async () => {
    const s = sink(true);
    const p = transferProgress("restoring", 4_000_000, {
      stream: s,
      startAfterMs: 0,
      ttyIntervalMs: 5,
      logIntervalMs: 1000,
    });
    p.add(1_000_000);
    await until(() => s.out.length >= 1);
    p.add(3_000_000);
    p.done();
    // The bar is redrawn in place: carriage return first, erase-to-end-of-line (ESC [K) last.
    expect(s.out[0]?.startsWith("\r")).toBe(true);
    expect(s.out[0]?.endsWith("\u001b[K")).toBe(true);
    expect(s.out[0]).toMatch(/kcache: restoring \[######-{18}\] {2}25% 1\.00 MB\/4\.00 MB .*\/s/);
    expect(s.out.at(-1)).toMatch(/^\rkcache: restoring \[#{24}\] 100% 4\.00 MB\/4\.00 MB .*\n$/);
  });

  it("writes a plain line every few seconds in a CI log", async () => {
    const s = sink(false);
    const p = transferProgress("uploading", null, {
      stream: s,
      startAfterMs: 0,
      ttyIntervalMs: 1,
      logIntervalMs: 10,
    });
    p.add(2_500_000);
    // A line, then another as the interval passes again: not a bar redrawn.
    await until(() => s.out.length >= 2);
    p.done();
    expect(s.out[0]).toMatch(/^kcache: uploading 2\.50 MB, .*\/s\n$/);
    expect(s.out.every((l) => !l.includes("\r"))).toBe(true);
  });
});
