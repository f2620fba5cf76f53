import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StoreError } from "../errors.js";
import { MANIFESTS } from "./layout.js";
import { ObjectNotFound, type Store, type StoredObject } from "./store.js";

export interface GhaSettings {
  /** A download or upload that takes longer fails. */
  timeoutMs: number;
  /** Where objects pass through on disk; the same on every runner, since GitHub keys entries by path too. */
  dir: string;
}

export const DEFAULT_GHA_DIR = "/tmp/kcache-gha";
/** A download or upload that takes longer fails (the job goes on without the cache). */
export const DEFAULT_GHA_TIMEOUT_MS = 10 * 60 * 1000;

/** Lines @actions/core printed during one call, and whether they report a failure. */
interface Captured {
  lines: string[];
}

/**
 * GitHub's own cache service, through @actions/cache (the code actions/cache runs). Each pack and
 * manifest is one cache entry (few large objects: GitHub allows 200 uploads a minute). Keys are
 * `kcache/<object name>`; lookups use GitHub's own semantics: exact key, then the newest key with a
 * prefix. The service cannot list or delete: `list` answers with the newest match only, and
 * GitHub evicts entries itself (7 days unused, 10 GB per repository).
 */
export function ghaStore(settings: GhaSettings): Store {
  const key = (name: string) => {
    const k = `kcache/${name}`;
    if (k.length > 512)
      throw new StoreError(`${name}: over GitHub's 512-character cache key limit; shorten key.prefix`);
    return k;
  };
  // Manifests share one path so that GitHub's version (a hash of the paths) matches across keys,
  // which prefix lookups need; packs get their own, so several can download at once.
  const dirFor = (name: string) =>
    name.startsWith(`${MANIFESTS}/`)
      ? path.join(settings.dir, "manifest")
      : path.join(settings.dir, "o", createHash("sha1").update(name).digest("hex").slice(0, 20));
  const fileIn = (dir: string) => path.join(dir, "object");

  const save = async (name: string, write: (file: string) => Promise<void>): Promise<"saved" | "exists"> => {
    const dir = dirFor(name);
    return exclusive(async () => {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir, { recursive: true });
      await write(fileIn(dir));
      const cache = await actionsCache();
      const { result, lines } = await captured(() =>
        cache.saveCache([dir], key(name), { uploadChunkSize: 32 * 1024 * 1024 }),
      );
      fs.rmSync(dir, { recursive: true, force: true });
      if (result !== -1) return "saved";
      if (lines.lines.some((l) => /Unable to reserve cache with key/.test(l))) return "exists";
      throw new StoreError(`GitHub cache: saving ${name} failed: ${failure(lines) ?? "no reason given"}`);
    });
  };

  /** Downloads (or only looks up) an object; `use` runs on the file before the next call may reuse its folder. */
  const download = async <T>(
    name: string,
    lookupOnly: boolean,
    use: (file: string) => T,
  ): Promise<T | null> => {
    const dir = dirFor(name);
    return exclusive(async () => {
      fs.rmSync(dir, { recursive: true, force: true });
      const cache = await actionsCache();
      const { result, lines } = await captured(() =>
        cache.restoreCache([dir], key(name), [], {
          lookupOnly,
          timeoutInMs: settings.timeoutMs,
          segmentTimeoutInMs: settings.timeoutMs,
        }),
      );
      const why = failure(lines);
      if (why) throw new StoreError(`GitHub cache: reading ${name} failed: ${why}`);
      if (result === undefined) return null;
      return use(fileIn(dir));
    });
  };

  return {
    description: "GitHub Actions cache",
    capabilities: { listAll: false, delete: false },

    put: async (name, body) => {
      let size = 0;
      const outcome = await save(name, async (file) => {
        await pipeline(body, fs.createWriteStream(file));
        size = fs.statSync(file).size;
      });
      if (outcome === "exists") throw new StoreError(`GitHub cache: ${name} already exists`);
      return { size };
    },

    createIfAbsent: async (name, body) =>
      (await save(name, async (file) => fs.writeFileSync(file, body))) === "saved",

    get: async (name) => {
      // The file is opened before the folder can be reused, and removed once read.
      const fd = await download(name, false, (file) => fs.openSync(file, "r"));
      if (fd === null) throw new ObjectNotFound(name);
      const stream = fs.createReadStream("", { fd, highWaterMark: 1 << 20 });
      if (!name.startsWith(`${MANIFESTS}/`)) {
        stream.on("close", () => fs.rmSync(dirFor(name), { recursive: true, force: true }));
      }
      return stream as Readable;
    },

    read: (name) => download(name, false, (file) => fs.readFileSync(file)),

    exists: async (name) => (await download(name, true, () => true)) !== null,

    list: async (prefix): Promise<StoredObject[]> => {
      if (!prefix.startsWith(`${MANIFESTS}/`)) {
        throw new StoreError("GitHub's cache service cannot list packs; it evicts unused entries by itself");
      }
      return exclusive(async () => {
        const cache = await actionsCache();
        const dir = dirFor(prefix);
        const { result, lines } = await captured(() =>
          cache.restoreCache([dir], key(prefix), [key(prefix)], { lookupOnly: true }),
        );
        const why = failure(lines);
        if (why) throw new StoreError(`GitHub cache: looking up ${prefix} failed: ${why}`);
        return result ? [{ name: result.slice("kcache/".length), size: 0, modified: new Date() }] : [];
      });
    },

    // GitHub's service has no delete for a job's token: entries age out after 7 days unused.
    delete: async () => {},
  };
}

type ActionsCache = typeof import("@actions/cache");
let cacheModule: Promise<ActionsCache> | undefined;
function actionsCache(): Promise<ActionsCache> {
  cacheModule ??= import("@actions/cache");
  return cacheModule;
}

/** The first line in which @actions/cache reported a failure it otherwise swallows. */
function failure(c: Captured): string | null {
  const line = c.lines.find((l) => /^::(warning|error)::/.test(l) || /^Failed to (save|restore)/.test(l));
  if (!line || /Unable to reserve cache with key/.test(line)) return null;
  return line.replace(/^::(warning|error)::/, "").replace(/%0A/g, " ");
}

let queue: Promise<unknown> = Promise.resolve();
/**
 * One GitHub cache call at a time: @actions/core reports failures only as printed lines, which are
 * captured per call, and archives are made relative to GITHUB_WORKSPACE, set to / while a call runs
 * so the same absolute path comes back on any runner.
 */
function exclusive<T>(fn: () => Promise<T>): Promise<T> {
  const run = queue.then(async () => {
    const workspace = process.env.GITHUB_WORKSPACE;
    process.env.GITHUB_WORKSPACE = "/";
    process.env.RUNNER_TEMP ??= os.tmpdir();
    try {
      return await fn();
    } finally {
      if (workspace === undefined) delete process.env.GITHUB_WORKSPACE;
      else process.env.GITHUB_WORKSPACE = workspace;
    }
  });
  queue = run.catch(() => {});
  return run;
}

/** Runs `fn` with stdout captured: @actions/core writes its messages there, which must not mix with kcache's --json. */
async function captured<T>(fn: () => Promise<T>): Promise<{ result: T; lines: Captured }> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    lines.push(...String(chunk).split(/\r?\n/).filter(Boolean));
    const cb = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    cb?.();
    return true;
  }) as typeof process.stdout.write;
  try {
    return { result: await fn(), lines: { lines } };
  } finally {
    process.stdout.write = write;
    if (process.env.KCACHE_GHA_DEBUG)
      for (const l of lines) process.stderr.write(`kcache: @actions/cache: ${l}\n`);
  }
}
