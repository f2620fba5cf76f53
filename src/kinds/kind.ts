import path from "node:path";
import type { PickleRewrite } from "./pickle-rewriter.js";

/** One file of a cache entry as found on disk. */
export interface EntryFile {
  /** Path relative to the entry ("" when the entry is a single file). */
  rel: string;
  size: number;
  mtimeMs: number;
  /** When the file was last read, as the file system keeps it (cache/usage/usage.ts reads use from it). */
  atimeMs: number;
  ino: number;
}

/** A candidate entry found by a scan: a top-level item of the cache whose completeness is not yet known. */
export interface FoundEntry {
  /** Path relative to the cache root; "/"-separated. */
  name: string;
  files: EntryFile[];
}

/** Where a file of an entry lies under the cache root (`rel` "" for a file-shaped entry). */
export function entryFilePath(root: string, entry: { name: string }, rel: string): string {
  return rel ? path.join(root, entry.name, rel) : path.join(root, entry.name);
}

export interface ScanResult {
  entries: FoundEntry[];
  /** Compiler temp folders and files (Triton's tmp.pid_*), never saved. */
  tempDirs: number;
  /** Lock files, never saved. */
  lockFiles: number;
  /** Build products tied to this machine (precompiled headers), never saved. */
  localFiles: number;
  /** Symlinks, sockets and other non-regular files, never saved. */
  otherFiles: number;
}

/** The kinds of cache kcache knows; `kind:` in kcache.yml and manifests names one. */
export const CACHE_KIND_NAMES = ["triton", "inductor", "dir"] as const;
export type CacheKindName = (typeof CACHE_KIND_NAMES)[number];

/**
 * One cache folder of a job: where it lies, its kind, and which of its entries count. kcache.yml's
 * `caches:` and actions/cache-style `path:` lines (globs and `!` exclusions) both end up as these.
 */
export interface CacheFolder {
  name: string;
  /** "auto": detected from the folder's layout when saving, taken from the manifest when restoring. */
  kind: CacheKindName | "auto";
  /** Absolute. */
  path: string;
  /** Variable that points the job at this cache. */
  env: string | undefined;
  /** Globs relative to `path`: an entry counts when it, or a folder above it, matches one. None: all. */
  include?: string[];
  /** Absolute globs (`!` lines): an entry is left out when it, or a folder above it, matches one. */
  exclude?: string[];
  /**
   * Entries found in the folder before the job that the restored key lacks are uploaded as if this
   * job had made them (a runner that only ever runs the default branch). Default: never uploaded.
   */
  trustLocal?: boolean;
  /** The job works in a folder of its own, made from this one by hard links, merged back only after a trusted job passed. */
  isolate?: boolean;
  /** The most bytes of entries the folder keeps between jobs; least recently used entries go first (null: no bound). */
  maxSize?: number | null;
  /**
   * Restored lazily: entries recent jobs used before the job, every other one fetched alone when the
   * job looks it up (Triton's caches; cache/lazy/). Its packs hold each entry in frames of its own.
   */
  lazy?: boolean;
}

/**
 * A cache kind says what an entry is in one kind of cache directory: how to find entries, when one is
 * complete, and how its bytes differ between where it was saved and where it is restored.
 */
export interface CacheKind {
  readonly kind: CacheKindName;
  /** An entry is a top-level folder of files (`<cache>/<entry>/<file>` in a pack) or a single file (`<cache>/<path>`). */
  readonly entryShape: "folder" | "file";
  /**
   * Whether its entries are the folders of Triton's cache manager, whose every lookup the hook sees
   * (so the hook alone can say which entries a job used, where access times cannot).
   */
  readonly lookupsSeenByHook: boolean;
  /** Lists candidate entries with their files' stats; reads no file contents. */
  scan(root: string): Promise<ScanResult>;
  /** Why an entry may not be saved, or null when it is complete. Reads what it must (group files). */
  incompleteReason(root: string, entry: FoundEntry): string | null;
  /** Whether `name` is a well-formed entry name for this kind (checked before any restore write). */
  isEntryName(name: string): boolean;
  /**
   * Whether a file's stored bytes differ from its bytes on disk (so it must be normalised/relocated):
   * the entry's name and the file's path in it ("" for a file-shaped entry).
   */
  isRelocatable(entryName: string, rel: string): boolean;
  /** Stored form of a relocatable file: independent of the cache's absolute path. */
  normalize(root: string, entryName: string, rel: string, data: Buffer): Buffer;
  /** On-disk form of a relocatable file restored under `root`. */
  relocate(root: string, entryName: string, rel: string, data: Buffer): Buffer;
  /**
   * `normalize` written straight to the file `out`, for files large enough that holding the result
   * too would double kcache's memory (torch.compile's pickles, up to 256 MiB): the size written, or
   * null where the stored form is the same bytes (nothing written).
   */
  normalizeInto?(root: string, entryName: string, rel: string, data: Buffer, out: string): number | null;
  /**
   * How a file's `normalize` runs in a child process (torch.compile's pickles): a save gathers them
   * and runs them together, one process for all, before hashing or packing (pack/write/stored-forms.ts).
   * Null where the stored form needs no child process.
   */
  normalization?(root: string, entryName: string, rel: string, data: Buffer): PickleRewrite | null;
  /**
   * How a file's `relocate` runs in a child process, for kinds whose files are rewritten by one
   * (torch.compile's pickles): a restore gathers them and runs them together, one process for all
   * (pickle-rewriter.ts's runRewrites). Null where the file is placed as `relocate` gives it.
   */
  relocation?(root: string, entryName: string, rel: string, data: Buffer): PickleRewrite | null;
  /**
   * Whether a file may be shared by a hard link between the persistent folder and a job's own folder:
   * true only when every tool that writes it replaces it by rename (a new inode) and never opens the
   * existing file to write, which would edit both folders at once (docs/self-hosted.md says which).
   */
  linkSafe(entryName: string, rel: string): boolean;
  /**
   * Whether an entry is an autotune result (Triton's `<fn>.autotune.json`, Inductor's `.best_config`):
   * a timing-driven winner, which carries who produced it (docs/benchmarks.md), not compiled code.
   */
  isAutotuneResult(entry: FoundEntry): boolean;
  /**
   * Whether an entry is one compiled kernel (what a person counts: Triton's entry with a group file),
   * not a launcher, an autotune result or another file: stats count kernels, not entries.
   */
  isKernel(entry: FoundEntry): boolean;
  /** Sorts an entry's files into pack order: files Triton looks up first (group files) come last. */
  packOrder(files: EntryFile[]): EntryFile[];
}

/** Lock and temp names shared by kinds that hold compiler output. */
export const KCACHE_PRIVATE_PREFIX = ".kcache-";
