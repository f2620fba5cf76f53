import v8 from "node:v8";
import vm from "node:vm";

/**
 * Compressed chunks a worker thread hands this thread (a save's pack bytes on their way to the
 * store) live a little while, waiting for the store's stream, and end up in the old generation; V8
 * frees them only when external memory has grown by 64 MiB since the last full collection. Two
 * builders of a 1 GB save kept 40-47 MB of spent chunks this way. A full collection after every
 * COLLECT_EVERY bytes handed over bounds that garbage by what the memory budget allows, at the cost
 * of a collection of the main thread's small heap (a few ms) per 16 MiB of compressed bytes, while
 * the thread mostly waits on the builders.
 */
const COLLECT_EVERY = 16 * 1024 * 1024;

let since = 0;
let collect: (() => void) | null | undefined;

/** Counts `bytes` handed over; collects garbage once enough have been. */
export function handedOver(bytes: number): void {
  since += bytes;
  if (since < COLLECT_EVERY) return;
  since = 0;
  collector()?.();
}

/**
 * V8's collector, reached as jest's leak detector does (exposed for one new context, then hidden
 * again, so no script sees a global gc). Null where V8 refuses.
 */
function collector(): (() => void) | null {
  if (collect === undefined) {
    try {
      v8.setFlagsFromString("--expose-gc");
      collect = vm.runInNewContext("gc") as () => void;
    } catch {
      collect = null;
    } finally {
      v8.setFlagsFromString("--no-expose-gc");
    }
  }
  return collect ?? null;
}
