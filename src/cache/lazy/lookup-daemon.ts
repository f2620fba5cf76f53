import { spawn } from "node:child_process";
import net from "node:net";
import type { Writable } from "node:stream";
import type { JobContext } from "../job-context.js";
import type { LocalState } from "../local-state.js";
import { JobLookups, type LazyReport, type LookupEnv } from "./job-lookups.js";

/**
 * Set in the environment of a process started to serve a job's lookups between steps that are
 * processes of their own (the action's restore step to its save step): the entries its restore
 * placed ahead, for the report.
 */
export const LOOKUP_DAEMON_ENV = "KCACHE_LOOKUP_DAEMON";

/** A server that never hears the stop request leaves after this long: GitHub's default job timeout. */
const LIFETIME_MS = 6 * 3600_000;
/** How long the restore waits for the server to say it is serving (it builds the job's context again). */
const READY_MS = 60_000;
/** After its answer to the stop request, the server leaves at the latest this long after. */
const EXIT_AFTER_STOP_MS = 2_000;

/** What the server answers the stop request with: what the lookups came to, and what it warned of. */
export interface DaemonReport {
  lazy: LazyReport;
  warnings: string[];
}

/**
 * Starts `script` (the running program, which serves when it finds LOOKUP_DAEMON_ENV) as a process
 * of its own that outlives the caller, and waits until it serves. Its variables for the job's
 * processes, or null when it found nothing to serve. Throws with the reason when it did not start.
 */
export async function startLookupDaemon(
  script: string,
  prefetched: number,
  env: NodeJS.ProcessEnv,
): Promise<LookupEnv | null> {
  const child = spawn(process.execPath, [script], {
    detached: true,
    stdio: ["ignore", "pipe", "ignore"],
    env: { ...env, [LOOKUP_DAEMON_ENV]: String(prefetched) },
  });
  try {
    const line = await firstLine(child.stdout, READY_MS, () => child.exitCode ?? child.signalCode);
    const ready = JSON.parse(line) as { env?: LookupEnv; none?: boolean; error?: string };
    if (ready.error) throw new Error(ready.error);
    child.unref();
    return ready.env ?? null;
  } catch (e) {
    child.kill("SIGKILL");
    throw e;
  } finally {
    child.stdout.destroy();
  }
}

/** The first line a stream gives, within `ms`; throws when it ends or the time runs out first. */
function firstLine(
  stream: NodeJS.ReadableStream,
  ms: number,
  exited: () => number | string | null,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(
      () => reject(new Error(`it did not say it was serving within ${ms / 1000} s`)),
      ms,
    );
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      text += chunk;
      const nl = text.indexOf("\n");
      if (nl < 0) return;
      clearTimeout(timer);
      resolve(text.slice(0, nl));
    });
    stream.on("end", () => {
      clearTimeout(timer);
      reject(new Error(`it ended before it served (${exited() ?? "no exit status"})`));
    });
    stream.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/**
 * The serving process: serves the job's lookups until a stop request (or its lifetime) ends them,
 * says on `ready` (then closed) that it serves, and answers the stop request with what the lookups
 * came to. The entries other jobs shared live are recorded in the local state before the answer,
 * so the save that follows leaves them out of its key. False when there is nothing to serve (the
 * process is then to leave).
 */
export async function serveLookups(
  ctx: JobContext,
  state: LocalState | null,
  prefetched: number,
  warnings: string[],
  ready: Writable,
): Promise<boolean> {
  let lookups: JobLookups | null = null;
  const lifetime = setTimeout(() => void stopped().finally(() => process.exit(0)), LIFETIME_MS);
  const stopped = async (): Promise<DaemonReport> => {
    clearTimeout(lifetime);
    const lazy = (await lookups?.stop(prefetched)) as LazyReport;
    // The answer is written next; whatever else holds the process open (a store's sockets) does not.
    setTimeout(() => process.exit(0), EXIT_AFTER_STOP_MS).unref();
    return { lazy, warnings };
  };
  try {
    lookups = await JobLookups.start(ctx, state, stopped);
  } catch (e) {
    clearTimeout(lifetime);
    ready.write(`${JSON.stringify({ error: (e as Error).message })}\n`);
    return false;
  }
  if (!lookups) {
    clearTimeout(lifetime);
    ready.write(`${JSON.stringify({ none: true })}\n`);
    return false;
  }
  ready.write(`${JSON.stringify({ env: lookups.env() })}\n`);
  return true;
}

/**
 * Asks the serving process at `socket` to stop: it shares what the job completed last and answers
 * with what the lookups came to. Null when it does not answer within `waitMs` (gone, or stalled).
 */
export function stopLookupDaemon(socket: string, waitMs: number): Promise<DaemonReport | null> {
  return new Promise((resolve) => {
    let text = "";
    const conn = net.createConnection(socket);
    const done = (r: DaemonReport | null) => {
      clearTimeout(timer);
      conn.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done(null), waitMs);
    conn.setEncoding("utf8");
    conn.on("connect", () => conn.write(`${JSON.stringify({ stop: true })}\n`));
    conn.on("data", (chunk: string) => {
      text += chunk;
    });
    conn.on("end", () => {
      try {
        const r = JSON.parse(text) as DaemonReport;
        done(r?.lazy ? r : null);
      } catch {
        done(null);
      }
    });
    conn.on("error", () => done(null));
  });
}
