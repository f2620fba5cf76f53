import { Readable } from "node:stream";

/**
 * kcache's standard streams as a cache's must be: its input left alone, and its output best effort.
 * Called before anything else loads (bin/kcache.js, the single executable's entry).
 */
export function settleStandardStreams(): void {
  leaveStandardInputAlone();
  tolerateLostOutput();
}

/**
 * Keeps kcache off its standard input, which it never reads. Node opens fd 0 the first time
 * anything reads `process.stdin`, and so does every ES module import of `node:process` (Node's
 * facade of a built-in module reads each of its getters): a library kcache bundles (env-ci's execa,
 * the AWS SDK) does so as it loads. Opening a pipe sets O_NONBLOCK on it, and that flag belongs to
 * the pipe's open file, which kcache shares with the shell that started it. Node clears it again when
 * it exits; a kill -9 (a cancelled or timed-out job, an OOM kill) leaves it set, and a shell reading
 * its script from that pipe, as GitLab's shell executor's does, then fails at its next line with
 * "error reading input file: Resource temporarily unavailable" and ends the job (exit 2): the cache
 * would have broken the build. So `process.stdin` becomes an empty stream of kcache's own.
 */
function leaveStandardInputAlone(): void {
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

/**
 * Messages are for people, and a job's output is in its log file too: a reader that went away
 * (`kcache run ... | head`, a runner's log pipe closed: EPIPE) or a full disk behind a redirect
 * (ENOSPC) must not end kcache with an unhandled error before the job's commands or its save ran.
 * What cannot be written is dropped.
 */
function tolerateLostOutput(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
}
