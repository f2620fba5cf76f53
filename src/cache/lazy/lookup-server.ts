import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { EntryFetcher } from "./entry-fetcher.js";
import type { LiveWriter } from "./live-writer.js";

/** The private folders of lookup servers, under the system's temp folder. */
const PREFIX = "kcache-lazy-";
/** A folder younger than this may be a server still starting: never taken for a stale one. */
const STARTING_MS = 60_000;

/** A lookup is one line of JSON: a folder and a file name. Anything longer is not one. */
const MAX_REQUEST = 16 * 1024;
/**
 * Connections at once: each of the job's processes holds one while it waits for an answer (a
 * parallel group of 8 devices with a few workers each, a test runner's 64), far below this; past it
 * the connection is closed at once and that process compiles, and kcache's own descriptors are spared.
 */
const MAX_CONNECTIONS = 1024;
/** A process sends its line as it connects: one that has sent none this long after is not asking. */
const REQUEST_MS = 60_000;
/** The most a stop waits for lines still coming from the job's last moments. */
const DRAIN_MS = 2_000;

/**
 * The job's processes ask for entries here: kcache's Python hook connects to this Unix socket when
 * Triton's cache manager looks up a file of an entry folder that is not on disk, sends
 * `{"folder": ..., "file": ...}` and waits for `{"placed": bool, "why": ...}` (the entry is then in
 * place, or the job compiles it); under store.live it also sends `{"wrote": folder}` after each write
 * into an entry folder. The socket is the job's own: mode 0600 in a private folder. Served by a
 * process of its own (the action's steps, lookup-daemon.ts), it also takes `{"stop": true}` from
 * the step that ends the job, answered with what `onStop` returns.
 */
export class LookupServer {
  /** Answers under way: stopping waits for them, not for idle connections. */
  private readonly pending = new Set<Promise<void>>();
  /** Connections taken and not yet closed, and how many were ever taken (for the drain before stopping). */
  private readonly open = new Set<net.Socket>();
  private accepted = 0;

  private constructor(
    private readonly server: net.Server,
    readonly socket: string,
    private readonly dir: string,
  ) {}

  static async start(
    fetcher: EntryFetcher,
    writer: LiveWriter | null = null,
    onStop?: () => Promise<unknown>,
  ): Promise<LookupServer> {
    await removeStaleServers();
    // A Unix socket's path is bounded (~107 bytes): a short folder of its own under the system's temp.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), PREFIX));
    const socket = path.join(dir, `${randomBytes(4).toString("hex")}.sock`);
    let self: LookupServer | null = null;
    const server = net.createServer((conn) => self?.serve(conn, { fetcher, writer, onStop }));
    server.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socket, () => resolve());
    });
    fs.chmodSync(socket, 0o600);
    server.unref();
    self = new LookupServer(server, socket, dir);
    return self;
  }

  /**
   * Stops taking lookups; those under way are answered first. Lines the job's processes sent as they
   * ended (a live write and its digest) may still wait to be taken or read: they are taken while they
   * come, until none came for a moment (at most DRAIN_MS), so none is lost to the close.
   */
  async stop(): Promise<void> {
    const until = performance.now() + DRAIN_MS;
    for (let seen = -1; performance.now() < until && (seen !== this.accepted || this.open.size > 0); ) {
      seen = this.accepted;
      await new Promise((r) => setTimeout(r, 50));
    }
    this.server.close();
    while (this.pending.size) await Promise.allSettled([...this.pending]);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Reads one line from a process of the job and answers it. The line is the job's, not kcache's:
   * whatever it holds (any JSON value, bytes that are not UTF-8, no newline at all) gets an answer
   * or a closed connection, and nothing in answering it can reject unheard or stop the server.
   */
  private serve(conn: net.Socket, handlers: Handlers): void {
    this.accepted++;
    this.open.add(conn);
    conn.on("close", () => this.open.delete(conn));
    let text = "";
    conn.setEncoding("utf8");
    conn.setTimeout(REQUEST_MS, () => conn.destroy());
    conn.on("error", () => {});
    conn.on("data", (chunk: string) => {
      text += chunk;
      if (text.length > MAX_REQUEST) {
        conn.destroy();
        return;
      }
      const nl = text.indexOf("\n");
      if (nl < 0) return;
      conn.removeAllListeners("data");
      conn.setTimeout(0);
      const line = text.slice(0, nl);
      const reply = (a: unknown) => void conn.end(`${JSON.stringify(a)}\n`);
      if (handlers.onStop && isStop(line)) {
        // Not pending, nor open: stopping waits for lookups and the job's last lines, and this answer comes after it.
        this.open.delete(conn);
        void handlers.onStop().then(reply, () => conn.destroy());
        return;
      }
      const done = answer(line, handlers)
        .catch((e: unknown) => ({ placed: false, why: `not served: ${(e as Error)?.message ?? e}` }))
        .then(reply);
      this.pending.add(done);
      void done.finally(() => this.pending.delete(done));
    });
  }
}

interface Handlers {
  fetcher: EntryFetcher;
  writer: LiveWriter | null;
  onStop?: () => Promise<unknown>;
}

function isStop(line: string): boolean {
  return requestOf(line)?.stop === true;
}

/** What a line asks, as far as its fields have the types a request's have; null for anything else. */
function requestOf(
  line: string,
): { folder?: string; file?: string; wrote?: string; sha256?: string; stop?: true } | null {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return null;
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
  const r = v as Record<string, unknown>;
  const text = (x: unknown) => (typeof x === "string" ? x : undefined);
  return {
    folder: text(r.folder),
    file: text(r.file),
    wrote: text(r.wrote),
    sha256: typeof r.sha256 === "string" && /^[0-9a-f]{64}$/.test(r.sha256) ? r.sha256 : undefined,
    ...(r.stop === true ? { stop: true as const } : {}),
  };
}

async function answer(
  line: string,
  { fetcher, writer }: Handlers,
): Promise<{ placed: boolean; why: string }> {
  const req = requestOf(line);
  if (!req) return { placed: false, why: "not a lookup" };
  // A process of the job wrote into an entry folder: shared live once it settles (store.live).
  if (req.wrote !== undefined) {
    writer?.wrote(req.wrote, req.file, req.sha256);
    return { placed: false, why: "noted" };
  }
  if (req.folder === undefined) return { placed: false, why: "not a lookup" };
  return await fetcher.lookup(req.folder, req.file ?? "");
}

/**
 * Removes the folders of lookup servers that died without removing them (kill -9, a runner that
 * ended the job's processes): a folder older than a minute whose socket no server answers on. A
 * folder of a live server (another job's, on a shared machine) answers, and stays.
 */
export async function removeStaleServers(tmp = os.tmpdir()): Promise<number> {
  let names: string[];
  try {
    names = fs.readdirSync(tmp).filter((n) => n.startsWith(PREFIX));
  } catch {
    return 0;
  }
  let removed = 0;
  for (const n of names) {
    const dir = path.join(tmp, n);
    try {
      const st = fs.lstatSync(dir);
      if (!st.isDirectory() || Date.now() - st.mtimeMs < STARTING_MS) continue;
      const sockets = fs.readdirSync(dir).filter((f) => f.endsWith(".sock"));
      if ((await Promise.all(sockets.map((f) => answers(path.join(dir, f))))).some(Boolean)) continue;
      fs.rmSync(dir, { recursive: true, force: true });
      removed++;
    } catch {
      // not ours to read or remove: left as it is
    }
  }
  return removed;
}

/** Whether a server answers at the Unix socket `file` (a connection is accepted within a second). */
function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const conn = net.createConnection(file);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      conn.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(true), 1000);
    conn.on("connect", () => done(true));
    conn.on("error", () => done(false));
  });
}
