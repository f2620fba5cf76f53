import { execFileSync } from "node:child_process";
import os from "node:os";

/** Runs `fn` `n` times and returns every wall time in seconds. */
export async function repeat(
  n: number,
  fn: (i: number) => Promise<void> | void,
  before?: (i: number) => void,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    before?.(i);
    const t0 = performance.now();
    await fn(i);
    times.push((performance.now() - t0) / 1000);
  }
  return times;
}

/**
 * Times two ways of doing the same thing in alternating order, round by round, so that a machine
 * whose disk or CPU speed drifts during the run affects both alike. `before` resets state and is
 * not timed.
 */
export async function paired(
  rounds: number,
  a: (i: number) => Promise<void> | void,
  b: ((i: number) => Promise<void> | void) | null,
  before?: (which: "a" | "b", i: number) => void,
): Promise<{ a: number[]; b: number[] }> {
  const out = { a: [] as number[], b: [] as number[] };
  const time = async (which: "a" | "b", fn: (i: number) => Promise<void> | void, i: number) => {
    before?.(which, i);
    const t0 = performance.now();
    await fn(i);
    out[which].push((performance.now() - t0) / 1000);
  };
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0 || !b) {
      await time("a", a, i);
      if (b) await time("b", b, i);
    } else {
      await time("b", b, i);
      await time("a", a, i);
    }
  }
  return out;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** The median of per-round ratios a[i] / b[i]: rounds interleaved, so each ratio compares like with like. */
export function medianRatio(a: number[], b: number[]): number {
  return median(a.map((v, i) => v / (b[i] as number)));
}

/** The machine a table was measured on, in one line. */
export function machineLine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU";
  let zstd = "none";
  try {
    zstd =
      execFileSync("zstd", ["--version"])
        .toString()
        .trim()
        .replace(/^\*+\s*/, "")
        .split(",")[0] ?? zstd;
  } catch {}
  return `${cpu}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.platform()} ${os.release()}, Node ${process.version}, ${zstd}`;
}
