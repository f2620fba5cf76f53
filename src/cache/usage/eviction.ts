import type { Use } from "../../manifest/manifest.js";

/**
 * Eviction by use (kcache.yml's `save.keep-unused` and `save.max-bytes`): which entries a save drops
 * although they are still in the cache folder, because no job used them for long enough. Pure: the
 * caller says what each entry's last use was.
 */
export interface EvictionSettings {
  /** Drop an entry unused for this many saves of its chain in a row (0: no such rule). */
  keepUnusedRuns: number;
  /** Drop an entry unused for this many days (0: no such rule). */
  keepUnusedDays: number;
  /** Then drop least recently used entries until the key holds at most this many bytes (null: no cap). */
  maxBytes: number | null;
}

export interface EvictionCandidate {
  id: string;
  size: number;
  /** Its last use: this save's own when the job used it now. */
  lastUsed: Use;
}

export type EvictionRule = "runs" | "days" | "max-bytes";

const DAY_MS = 86_400_000;

/** Whether an entry last used at `last` has been unused too long by the rules, as of save `now`. */
export function unusedTooLong(last: Use, now: Use, s: EvictionSettings): EvictionRule | null {
  if (last.generation >= now.generation) return null;
  if (s.keepUnusedRuns > 0 && now.generation - last.generation >= s.keepUnusedRuns) return "runs";
  // A use stamped by a clock ahead of ours is a use now, never older.
  const age = Date.parse(now.at) - Date.parse(last.at);
  if (s.keepUnusedDays > 0 && age >= s.keepUnusedDays * DAY_MS) return "days";
  return null;
}

/**
 * The entries a save at `now` drops, each with the rule that dropped it: first those unused too long,
 * then, while the rest is over the size cap, the least recently used (oldest use first, the larger
 * first between equals). Entries used now go last, so the cap drops them only when the job's own
 * working set is over it.
 */
export function chooseEvictions(
  candidates: EvictionCandidate[],
  now: Use,
  settings: EvictionSettings,
): Map<string, EvictionRule> {
  const out = new Map<string, EvictionRule>();
  const rest: EvictionCandidate[] = [];
  for (const c of candidates) {
    const rule = unusedTooLong(c.lastUsed, now, settings);
    if (rule) out.set(c.id, rule);
    else rest.push(c);
  }
  if (settings.maxBytes === null) return out;
  let total = rest.reduce((n, c) => n + c.size, 0);
  const lru = [...rest].sort(
    (a, b) =>
      a.lastUsed.generation - b.lastUsed.generation ||
      Date.parse(a.lastUsed.at) - Date.parse(b.lastUsed.at) ||
      b.size - a.size ||
      (a.id < b.id ? -1 : 1),
  );
  for (const c of lru) {
    if (total <= settings.maxBytes) break;
    out.set(c.id, "max-bytes");
    total -= c.size;
  }
  return out;
}
