import type { Readable } from "node:stream";
import { StalledError } from "./idle-timeout.js";
import type { Store } from "./store.js";

/**
 * A store judged stalled once per command: after one transfer sat a whole idle timeout without
 * progress (a StalledError), every later call fails at once with that error instead of waiting out
 * its own timeout, so a key of 60 packs on a dead store costs one idle timeout, not 15.
 */
export function latchStalls(store: Store): Store {
  let stalled: StalledError | null = null;
  const trip = (e: unknown) => {
    if (e instanceof StalledError) stalled ??= e;
    throw e;
  };
  const guard =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      if (stalled) throw new StalledError(`${stalled.message}; not tried again in this command`);
      return f(...a).catch(trip);
    };
  const watched = (body: Readable): Readable => {
    body.once("error", (e) => {
      if (e instanceof StalledError) stalled ??= e;
    });
    return body;
  };
  return {
    ...store,
    put: guard((name: string, body: Readable, bytes?: number) => store.put(name, body, bytes)),
    createIfAbsent: guard((name: string, body: Buffer) => store.createIfAbsent(name, body)),
    get: guard(async (name: string, bytes?: number) => watched(await store.get(name, bytes))),
    getRange: guard(async (name: string, offset: number, length: number) =>
      watched(await store.getRange(name, offset, length)),
    ),
    read: guard((name: string) => store.read(name)),
    exists: guard((name: string) => store.exists(name)),
    list: guard((prefix: string) => store.list(prefix)),
    delete: guard((name: string) => store.delete(name)),
  };
}
