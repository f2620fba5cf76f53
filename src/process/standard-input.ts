import { Readable } from "node:stream";

/**
 * Keeps kcache off its standard input, which it never reads. Node opens fd 0 the first time
 * anything reads `process.stdin`, and so does every ES module import of `node:process` (Node's
 * facade of a built-in module reads each of its getters): a library kcache bundles (env-ci's execa,
 * the AWS SDK) does so as it loads. Opening a pipe sets O_NONBLOCK on it, and that flag belongs to
 * the pipe's open file, which kcache shares with the shell that started it. Node clears it again when
 * it exits; a kill -9 (a cancelled or timed-out job, an OOM kill) leaves it set, and a shell reading
 * its script from that pipe, as GitLab's shell executor's does, then fails at its next line with
 * "error reading input file: Resource temporarily unavailable" and ends the job (exit 2): the cache
 * would have broken the build. So `process.stdin` becomes an empty stream of kcache's own before
 * anything else loads (bin/kcache.js, the single executable's entry).
 */
export function leaveStandardInputAlone(): void {
  let empty: Readable | undefined;
  Object.defineProperty(process, "stdin", {
    configurable: true,
    enumerable: true,
    get: () => {
      empty ??= Readable.from([]);
      return empty;
    },
  });
}
