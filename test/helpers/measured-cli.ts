import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { childOutput } from "./child-output.js";
import { BIN } from "./cli.js";

export interface MeasuredRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Peak resident memory of the kcache process in MB (null when it was killed). */
  peakRssMb: number | null;
  seconds: number;
}

/**
 * A preload that records the process's peak RSS (kB) when it exits: its memory's high-water mark
 * (VmHWM), not getrusage's maxrss, which on Linux also counts the image before exec: a child forked
 * from a test process that holds 400 MB would report 400 MB.
 */
export function rssProbe(): string {
  const file = path.join(os.tmpdir(), "kcache-rss-probe-hwm.cjs");
  if (!fs.existsSync(file)) {
    fs.writeFileSync(
      `${file}.${process.pid}`,
      `process.on("exit", () => { const f = process.env.KCACHE_TEST_RSS_FILE; if (!f) return; const fs = require("fs"); let kb; try { kb = Number(/VmHWM:\\s+(\\d+)/.exec(fs.readFileSync("/proc/self/status", "utf8"))[1]); } catch { kb = process.resourceUsage().maxRSS; } fs.writeFileSync(f, String(kb)); });\n`,
    );
    fs.renameSync(`${file}.${process.pid}`, file);
  }
  return file;
}

/**
 * Runs the built `kcache` as a user would, measuring its wall time and peak memory. `kill` is called
 * with the child once started, so a test can kill it at the moment it chooses. `limits` runs it under
 * `ulimit` settings (e.g. "-n 1024").
 */
export function runMeasured(
  args: string[],
  opts: {
    env: NodeJS.ProcessEnv;
    cwd: string;
    ulimit?: string;
    onStart?: (pid: number) => void;
    timeoutMs?: number;
  },
): Promise<MeasuredRun> {
  const rssFile = path.join(os.tmpdir(), `kcache-rss-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const env = {
    ...opts.env,
    NODE_OPTIONS: `--require ${rssProbe()}`,
    KCACHE_TEST_RSS_FILE: rssFile,
  };
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const command = opts.ulimit ? `ulimit ${opts.ulimit} && exec ${quoted}` : `exec ${quoted}`;
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { env, cwd: opts.cwd });
    const out = childOutput(child);
    const timer = opts.timeoutMs ? setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs) : null;
    child.on("error", reject);
    child.on("spawn", () => opts.onStart?.(child.pid as number));
    child.on("close", (code, signal) => {
      if (timer) clearTimeout(timer);
      let peakRssMb: number | null = null;
      try {
        peakRssMb = Number(fs.readFileSync(rssFile, "utf8")) / 1024;
        fs.rmSync(rssFile, { force: true });
      } catch {
        // killed before it could record
      }
      resolve({
        code,
        signal,
        stdout: out.stdout,
        stderr: out.stderr,
        peakRssMb,
        seconds: (performance.now() - t0) / 1000,
      });
    });
  });
}
