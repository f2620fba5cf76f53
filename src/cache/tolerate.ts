import { ConfigError, KcacheError, StoreError } from "../errors.js";
import type { Log } from "../log.js";
import { type Fault, faultOf, isIoFault, type Strictness } from "./faults.js";

/**
 * The rule that a cache never breaks the build: a store failure, damaged data or an unexpected fault
 * while restoring or saving warns once and the job goes on, unless --strict names its code (or is
 * given alone). Mistakes the user must fix (bad config, bad arguments) still fail. The fault met is
 * added to `faults` when given, coded as faults.ts says, whether it is tolerated or fails the command.
 */
export async function tolerateCacheFailure<T>(
  what: string,
  strict: Strictness,
  log: Log,
  fn: () => Promise<T>,
  faults?: Fault[],
): Promise<T | null> {
  try {
    return await fn();
  } catch (e) {
    const userMistake =
      e instanceof KcacheError && !(e instanceof StoreError) && e.code !== "EKCACHE_INTEGRITY";
    if (userMistake || e instanceof ConfigError) throw e;
    const met = faultOf(e);
    faults?.push(met);
    // A full disk, an unreadable file or a broken stream is a store or data fault (exit 3), not a bug.
    if (strict.fails(met.code))
      throw e instanceof KcacheError || !isIoFault(e)
        ? e
        : new StoreError(`${what}: ${(e as Error).message}`, e);
    const detail =
      e instanceof KcacheError
        ? e.message
        : isIoFault(e)
          ? `${(e as Error).message} (this machine's filesystem refused it: ${diskAdvice((e as NodeJS.ErrnoException).code)})`
          : `${(e as Error).message} (an unexpected error; run with --verbose for its stack)`;
    log.warn(`${what} skipped: ${detail}`);
    log.debug((e as Error).stack ?? "");
    return null;
  }
}

/** What to look at for a filesystem error kcache met on this machine, by its code. */
function diskAdvice(code: string | undefined): string {
  switch (code) {
    case "ENOSPC":
    case "EDQUOT":
      return "the disk or the quota is full; free space where the caches and kcache's state lie";
    case "EROFS":
      return "a read-only filesystem; point the cache or KCACHE_STATE_DIR at a writable folder";
    case "EACCES":
    case "EPERM":
      return "no permission; run as the folder's owner or give the user write access";
    case "ELOOP":
      return "a loop of symbolic links in the path";
    case "EEXIST":
    case "ENOTDIR":
    case "EISDIR":
      return "a file where a folder is expected, or the other way round";
    case "EMFILE":
    case "ENFILE":
      return "too many open files; raise the limit (ulimit -n)";
    default:
      return `${code}; check the folders kcache reads and writes`;
  }
}
