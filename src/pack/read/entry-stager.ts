import fs from "node:fs";
import path from "node:path";
import { NOT_RELOCATABLE, RelocationError } from "../../kinds/pickle-rewriter.js";
import { makeFolders } from "../../make-folders.js";
import { EntryDigest } from "../entry-digest.js";
import type { RestoreTarget, WantedEntry } from "../pack-request.js";
import { writeFullySync, writeNewFileSync } from "./checked-write.js";
import { type DeferredRewrites, WAITING } from "./deferred-rewrites.js";
import { place } from "./entry-place.js";
import type { MemberSink } from "./tar-reader.js";
import { stampOpenFile } from "./unread-stamp.js";

/** Relocatable files (Triton's group files) are rewritten whole, so held in memory: never past this. */
/** A relocatable file is held whole to be rewritten: Inductor's FX graph entries bundle their kernels and reach tens of MB. */
const MAX_RELOCATABLE = 256 * 1024 * 1024;

/**
 * One entry being restored. Its files stream straight into the entry's private staging place as the
 * pack delivers them, one open file at a time, each counted against what the manifest promises for
 * the entry before a byte is written; relocatable files are held until the end. `finish` verifies the
 * entry's digest, size and file count, writes the relocatable files for this cache's location and
 * renames the entry into place; anything else deletes the staging place. So nothing unverified is
 * ever visible in the cache, and memory holds only the small relocatable files.
 */
export class StagedEntry {
  readonly digest = new EntryDigest();
  /** Why the entry will not be placed; set at the first fault. */
  bad: string | null;
  private readonly staged: string;
  /** Relocatable files, each in one buffer of the size its header declared (bounded above). */
  private readonly held: { rel: string; data: Buffer | null; bytes: number }[] = [];
  private fd: number | null = null;
  private created = false;
  /** What this entry wrote to its staging place, by relative path: checked on disk before the rename. */
  private readonly written = new Map<string, number>();

  constructor(
    readonly wanted: WantedEntry,
    readonly entryName: string,
    readonly target: RestoreTarget,
    bad: string | null = null,
  ) {
    this.bad = bad;
    this.staged = path.join(target.staging, "e", entryName);
  }

  /** The sink for one file of the entry, or null when its data is to be skipped. */
  file(rel: string, size: number): MemberSink | null {
    if (this.bad) return null;
    // Bounded by the manifest before a byte is buffered or written: a pack that claims more bytes or
    // files for an entry than the manifest promises is refused, however it compresses.
    if (this.digest.size + size > this.wanted.size || this.digest.files + 1 > this.wanted.files) {
      this.fail(
        `pack holds more than the manifest promises for this entry (${this.wanted.size} bytes in ${this.wanted.files} files)`,
      );
      return null;
    }
    this.digest.beginFile(rel, size);
    const kind = this.target.kind;
    if (kind.isRelocatable(this.entryName, rel)) {
      if (size > MAX_RELOCATABLE) {
        this.fail(`${rel} is ${size} bytes; a relocatable file is at most ${MAX_RELOCATABLE}`);
        return null;
      }
      const held = { rel, data: Buffer.allocUnsafe(size) as Buffer | null, bytes: 0 };
      this.held.push(held);
      return {
        data: (chunk) => {
          this.digest.update(chunk);
          const into = held.data;
          if (!into || held.bytes + chunk.length > into.length) {
            this.fail(`${rel} holds more bytes than its header says (${size})`);
            held.data = null;
            return;
          }
          chunk.copy(into, held.bytes);
          held.bytes += chunk.length;
        },
        end: () => {},
      };
    }
    const dest = this.dest(rel);
    this.written.set(rel, size);
    try {
      this.prepare();
      this.fd = fs.openSync(dest, "wx");
    } catch (e) {
      this.fail(`could not be written: ${(e as Error).message}`);
    }
    return {
      data: (chunk) => {
        this.digest.update(chunk);
        if (this.bad || this.fd === null) return;
        try {
          writeFullySync(this.fd, chunk, dest);
        } catch (e) {
          this.fail(`could not be written: ${(e as Error).message}`);
        }
      },
      end: () => this.closeFile(),
    };
  }

  /** Marks the entry bad (its data is still read, to keep the digest honest, but never placed). */
  fail(reason: string): void {
    this.bad ??= reason;
    this.closeFile();
  }

  /**
   * Verifies the entry and places it: null when it is now in the cache, else why it is not (and its
   * staging place is gone). A file its kind rewrites in a child process joins `later` and the entry
   * waits (WAITING) until those run, together, at the end of the pack (`complete`).
   */
  finish(later: DeferredRewrites<StagedEntry>): string | null | typeof WAITING {
    this.closeFile();
    const w = this.wanted;
    let reason = this.bad;
    if (!reason) {
      const got = this.digest.digest();
      if (got !== w.sha256)
        reason = `digest mismatch (pack has ${got.slice(0, 12)}, manifest ${w.sha256.slice(0, 12)})`;
      else if (this.digest.size !== w.size || this.digest.files !== w.files)
        reason = "size or file count differs from manifest";
    }
    if (!reason) {
      try {
        this.prepare();
        for (const h of this.held) {
          const stored = h.data?.subarray(0, h.bytes) ?? Buffer.alloc(0);
          h.data = null; // the stored form is not kept once the relocated one exists
          const dest = this.dest(h.rel);
          const { kind, root } = this.target;
          const how = kind.relocation?.(root, this.entryName, h.rel, stored) ?? null;
          // Rewritten later, from a file: neither form is held meanwhile.
          if (how) later.add(this, h.rel, how, stored, dest);
          else {
            const data = kind.relocate(root, this.entryName, h.rel, stored);
            this.written.set(h.rel, data.length);
            writeNewFileSync(dest, data, true);
          }
        }
      } catch (e) {
        reason =
          e instanceof RelocationError
            ? `${NOT_RELOCATABLE}${e.message}`
            : `could not be written: ${(e as Error).message}`;
      }
    }
    if (!reason && later.waits(this)) return WAITING;
    later.drop(this);
    return this.placeOrDiscard(reason);
  }

  /** The entry's deferred rewrites ran: each file's size written, or why it could not be. */
  complete(rewritten: Map<string, number | Error>): string | null {
    let reason: string | null = null;
    for (const [rel, r] of rewritten) {
      if (typeof r === "number") this.written.set(rel, r);
      else
        reason ??=
          r instanceof RelocationError
            ? `${NOT_RELOCATABLE}${r.message}`
            : `could not be written: ${r.message}`;
    }
    return this.placeOrDiscard(reason);
  }

  /** Places the verified entry (reason null), or discards it: null when it is in the cache, else why not. */
  private placeOrDiscard(why: string | null): string | null {
    let reason = why;
    // What is on disk, not only what streamed: a file deleted under the staging place (by another
    // process) must never make a partial entry visible.
    if (!reason) reason = this.stagedDiffers();
    if (!reason) {
      try {
        place(this.staged, this.target.root, this.entryName, this.target.staging, this.target.keepExisting);
        return null;
      } catch (e) {
        reason = `could not be placed: ${(e as Error).message}`;
      }
    }
    this.discard();
    return reason;
  }

  /** Deletes whatever was staged. */
  discard(): void {
    this.closeFile();
    this.held.length = 0;
    fs.rmSync(this.staged, { recursive: true, force: true });
  }

  /** Why the staged files on disk are not exactly the ones written, or null when they are. */
  private stagedDiffers(): string | null {
    if (this.target.kind.entryShape !== "folder") {
      const size = this.written.get("");
      try {
        return fs.statSync(this.staged).size === size ? null : "staged file changed on disk before placing";
      } catch {
        return "staged file vanished before placing";
      }
    }
    let names: string[];
    try {
      names = fs.readdirSync(this.staged);
    } catch {
      return "staged entry vanished before placing";
    }
    if (names.length !== this.written.size) return "staged entry changed on disk before placing";
    for (const n of names) {
      const want = this.written.get(n);
      let size: number;
      try {
        size = fs.statSync(path.join(this.staged, n)).size;
      } catch {
        return `staged ${n} vanished before placing`;
      }
      if (size !== want) return `staged ${n} changed on disk before placing`;
    }
    return null;
  }

  private dest(rel: string): string {
    return rel ? path.join(this.staged, rel) : this.staged;
  }

  private prepare(): void {
    if (this.created) return;
    const isDir = this.target.kind.entryShape === "folder";
    makeFolders(isDir ? this.staged : path.dirname(this.staged));
    this.created = true;
  }

  private closeFile(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    try {
      // Marked unread here, on the reader's thread: the restore's main thread then has nothing to
      // stamp (12,000 files of a 1 GB restore, two system calls each, were ~100 ms of it).
      if (!this.bad) stampOpenFile(fd);
      fs.closeSync(fd);
    } catch (e) {
      this.bad ??= `could not be written: ${(e as Error).message}`;
    }
  }
}
