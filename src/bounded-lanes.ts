/**
 * Work over a list in at most `lanes` lanes at once: each lane takes the next item when its last one
 * is done (a shared cursor), so a slow item never holds up the others and no more than `lanes` run.
 * Restores read packs this way, saves write them, and `kcache run` gives commands their devices.
 */
export interface LaneOptions {
  /** After a lane's item fails, no lane starts another (a save fails as a whole); else all run. */
  stopOnFailure?: boolean;
}

/**
 * Runs `work(item, lane, index)` for every item, at most `lanes` at a time, in the items' order.
 * Resolves once every lane is idle; rejects with the first failure, after the lanes have stopped.
 */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  work: (item: T, lane: number, index: number) => Promise<void>,
  opts: LaneOptions = {},
): Promise<void> {
  let next = 0;
  let failed = false;
  const lane = async (n: number) => {
    while (next < items.length && !(failed && opts.stopOnFailure)) {
      const i = next++;
      try {
        await work(items[i] as T, n, i);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const count = Math.max(1, Math.min(lanes, items.length));
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, n) => lane(n)));
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failure) throw failure.reason;
}
