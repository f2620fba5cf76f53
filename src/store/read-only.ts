import { StoreError } from "../errors.js";
import type { Store } from "./store.js";

/**
 * Read-only mode: the job restores as ever and writes nothing to its store: no pack, manifest,
 * lease, run record or live object, and no deletion. sccache's read-only mode is the model. Where
 * a job's own definition can set the variables kcache reads (GitLab's pipeline variables override
 * predefined ones), no variable is the last line of trust: who holds the store's write credentials
 * is, and a job without them should restore, say so once and go on. One decision per job
 * (JobContext.readOnly), kept by the store itself (readOnlyStore below), so no writer can forget it.
 */
export class ReadOnlyMode {
  private reason: string | null;

  /** `declared`: why the job was asked to write nothing (--read-only, KCACHE_READ_ONLY, store.read-only). */
  constructor(declared: string | null = null) {
    this.reason = declared;
  }

  /** Why this job writes nothing to its store; null while it may write. */
  get why(): string | null {
    return this.reason;
  }

  /** Nothing is written from now on, for the rest of the command; the first reason stands. */
  enter(why: string): void {
    this.reason ??= why;
  }
}

/** A write refused because the job is read-only. A StoreError: a save tolerates it as any store failure. */
export class ReadOnlyRefusal extends StoreError {}

/** What a save says instead of saving, once. */
export function readOnlyLine(why: string): string {
  return `read-only (${why}): restore only, nothing saved`;
}

/**
 * `store`, keeping `mode`: every write (put, createIfAbsent, delete, reaping temporary files) of a
 * read-only job is refused with a ReadOnlyRefusal before it reaches the store. A write the store
 * forbids (HTTP 403: credentials that may read but not write, or none) puts the job in read-only
 * mode: that refusal is the last write tried in the command, with no retry of it and no other.
 */
export function readOnlyStore(store: Store, mode: ReadOnlyMode): Store {
  const refusal = (why: string, cause?: unknown) => new ReadOnlyRefusal(readOnlyLine(why), cause);
  const write =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      if (mode.why !== null) throw refusal(mode.why);
      try {
        return await f(...a);
      } catch (e) {
        const forbidden = forbiddenWrite(e);
        if (forbidden === null) throw e;
        const why = `${store.description} forbids writes: ${forbidden}`;
        mode.enter(why);
        throw refusal(mode.why ?? why, e);
      }
    };
  const reap = store.reapTemporary?.bind(store);
  return {
    ...store,
    put: write(store.put.bind(store)),
    createIfAbsent: write(store.createIfAbsent.bind(store)),
    delete: write(store.delete.bind(store)),
    ...(reap ? { reapTemporary: write(reap) } : {}),
  };
}

/** "HTTP 403 AccessDenied" where a store answered a write with 403 (its own error or the cause it wraps); else null. */
function forbiddenWrite(e: unknown): string | null {
  for (let err = e, depth = 0; err && depth < 3; err = (err as { cause?: unknown }).cause, depth++) {
    const answer = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
    if (answer.$metadata?.httpStatusCode === 403) {
      const code = answer.Code ?? (answer.name && answer.name !== "Error" ? answer.name : null);
      return `HTTP 403${code ? ` ${code}` : ""}`;
    }
  }
  return null;
}
