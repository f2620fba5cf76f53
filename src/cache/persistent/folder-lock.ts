import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { makeFolders } from "../../make-folders.js";
import {
  HEARTBEAT_MS,
  type OwnerRule,
  ownedName,
  ownerOf,
  ownerStale,
  pidNamespace,
} from "../../pack/read/staging-owner.js";

/**
 * One writer at a time over a persistent cache folder's shared parts: building a job's folder from
 * it (hard links), merging a job's entries into it, trimming it, and its record of use. Each holds
 * the lock for seconds at most. Node has no flock, so the lock is a file created exclusively,
 * holding its owner's name (staging-owner.ts): a holder of this namespace whose process is gone, or
 * one of another namespace silent for ten minutes, no longer holds it. tryHoldLock takes the same
 * kind of lock, under another file name, for as long as a run lasts.
 */
const LOCK_FILE = `${KCACHE_PRIVATE_PREFIX}lock`;
const HOLDER: OwnerRule = { prefix: "holder-", foreignMs: 10 * 60_000 };

/**
 * A lock taken for as long as its holder likes (a run's out folder, pipeline/out-folder.ts): its file
 * is touched every HEARTBEAT_MS, so a holder in another container or host reads as alive while it runs.
 */
export interface HeldLock {
  /** Lets the lock go (only if it is still this holder's). */
  release(): void;
}

/**
 * Takes the lock file `name` in `root` now, breaking one whose holder is gone; when a live holder
 * has it, says who ("pid 123", with "in another container or host" where its PID means nothing here).
 */
export function tryHoldLock(root: string, name: string): { held: HeldLock } | { holder: string } {
  makeFolders(root);
  const file = path.join(root, name);
  const me = ownedName(HOLDER.prefix);
  // Twice: the first try may only break a stale lock.
  if (!tryTake(file, me) && !tryTake(file, me)) return { holder: describeHolder(holderOf(file)) };
  const timer = setInterval(() => {
    const t = new Date();
    fs.utimes(file, t, t, () => {});
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    held: {
      release() {
        clearInterval(timer);
        if (holderOf(file) === me) fs.rmSync(file, { force: true });
      },
    },
  };
}

function describeHolder(seen: string): string {
  const owner = ownerOf(HOLDER.prefix, seen);
  if (!owner) return "a kcache starting this instant";
  return owner.where === pidNamespace()
    ? `pid ${owner.pid}`
    : `pid ${owner.pid} in another container or host`;
}

/** The lock was not free within the wait: the caller goes on without what it needed it for. */
export class FolderBusyError extends Error {}

/** Runs `fn` holding `root`'s lock; waits up to `waitMs` for it, else throws FolderBusyError. */
export async function withFolderLock<T>(root: string, fn: () => Promise<T> | T, waitMs = 30_000): Promise<T> {
  makeFolders(root);
  const file = path.join(root, LOCK_FILE);
  const me = ownedName(HOLDER.prefix);
  const deadline = Date.now() + waitMs;
  for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
    if (tryTake(file, me)) break;
    if (Date.now() > deadline)
      throw new FolderBusyError(`${root} is locked by another kcache (${holderOf(file)})`);
    await sleep(pause);
  }
  try {
    return await fn();
  } finally {
    // Only our own lock: one broken as stale under us belongs to its new holder now.
    if (holderOf(file) === me) fs.rmSync(file, { force: true });
  }
}

function tryTake(file: string, me: string): boolean {
  try {
    fs.writeFileSync(file, me, { flag: "wx" });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  breakIfStale(file);
  return false;
}

function holderOf(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/**
 * Removes a lock whose holder is gone. Two waiters may judge it stale at once: the lock is renamed
 * away first and removed only if it is still the one judged, else put back, so a fresh holder's lock
 * is never deleted.
 */
function breakIfStale(file: string): void {
  let seen: string;
  let mtimeMs: number;
  try {
    seen = fs.readFileSync(file, "utf8");
    mtimeMs = fs.statSync(file).mtimeMs;
  } catch {
    return;
  }
  const owner = ownerOf(HOLDER.prefix, seen);
  // A lock file half written by its holder this instant reads empty: not stale until it is old.
  if (owner ? !ownerStale(owner, mtimeMs, HOLDER) : Date.now() - mtimeMs < HOLDER.foreignMs) return;
  const moved = `${file}.${randomBytes(6).toString("hex")}`;
  try {
    fs.renameSync(file, moved);
  } catch {
    return;
  }
  if (holderOf(moved) !== seen) {
    try {
      fs.linkSync(moved, file);
    } catch {
      // someone took the lock meanwhile: theirs stands, and the one we moved was not stale
    }
  }
  fs.rmSync(moved, { force: true });
}
