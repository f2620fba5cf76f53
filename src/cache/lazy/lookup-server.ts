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
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socket, () => resolve());
    });
    fs.chmodSync(socket, 0o600);
    server.unref();
    self = new LookupServer(server, socket, dir);
    return self;
  }

  /** Stops taking lookups; those under way are answered first. */
  async stop(): Promise<void> {
    this.server.close();
    while (this.pending.size) await Promise.allSettled([...this.pending]);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private serve(conn: net.Socket, handlers: Handlers): void {
    let text = "";
    conn.setEncoding("utf8");
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
      const line = text.slice(0, nl);
      if (handlers.onStop && isStop(line)) {
        // Not pending: stopping waits for lookups, and this answer comes after it.
        void handlers.onStop().then((a) => conn.end(`${JSON.stringify(a)}\n`));
        return;
      }
      const done = answer(line, handlers).then((a) => {
        conn.end(`${JSON.stringify(a)}\n`);
      });
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
  try {
    return (JSON.parse(line) as { stop?: unknown })?.stop === true;
  } catch {
    return false;
  }
}

async function answer(
  line: string,
  { fetcher, writer }: Handlers,
): Promise<{ placed: boolean; why: string }> {
  let req: { folder?: unknown; file?: unknown; wrote?: unknown };
  try {
    req = JSON.parse(line) as typeof req;
  } catch {
    return { placed: false, why: "not a lookup" };
  }
  // A process of the job wrote into an entry folder: shared live once it settles (store.live).
  if (typeof req.wrote === "string") {
    writer?.wrote(req.wrote);
    return { placed: false, why: "noted" };
  }
  if (typeof req.folder !== "string") return { placed: false, why: "not a lookup" };
  try {
    return await fetcher.lookup(req.folder, typeof req.file === "string" ? req.file : "");
  } catch (e) {
    return { placed: false, why: (e as Error).message };
  }
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
