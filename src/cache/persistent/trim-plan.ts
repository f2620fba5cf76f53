import type { Tally } from "../usage/working-set.js";

/** Which entries a trim removes: pure, no disk (trim.ts gathers the facts and removes). */

export interface TrimCandidate {
  name: string;
  size: number;
  /** Milliseconds of its last known use. */
  lastUse: number;
  usedByThisJob: boolean;
  otherJobMayRead: boolean;
  inKey: boolean;
}

export interface TrimPlan {
  remove: Set<string>;
  before: Tally;
  removed: Tally;
  after: Tally;
  spared: { usedByThisJob: number; otherJobs: number };
}

/**
 * First every entry unused for longer than `olderThanMs`; then, while the rest is over `maxSize`,
 * the least recently used (entries outside the restored key before those in it, the larger first
 * between equals). An entry used by the job that just ended, or one another running job may read,
 * is never chosen; when only such entries are left over the bound, they are counted as spared.
 */
export function planTrim(
  candidates: TrimCandidate[],
  rules: { maxSize: number | null; olderThanMs: number | null; now?: number },
): TrimPlan {
  const now = rules.now ?? Date.now();
  const plan: TrimPlan = {
    remove: new Set(),
    before: tally(candidates),
    removed: { entries: 0, bytes: 0 },
    after: { entries: 0, bytes: 0 },
    spared: { usedByThisJob: 0, otherJobs: 0 },
  };
  const take = (c: TrimCandidate) => {
    plan.remove.add(c.name);
    plan.removed.entries++;
    plan.removed.bytes += c.size;
  };
  const spare = (c: TrimCandidate) => {
    if (c.usedByThisJob) plan.spared.usedByThisJob++;
    else plan.spared.otherJobs++;
  };
  const removable = (c: TrimCandidate) => !c.usedByThisJob && !c.otherJobMayRead;
  if (rules.olderThanMs !== null) {
    const cutoff = now - rules.olderThanMs;
    for (const c of candidates) if (c.lastUse < cutoff) (removable(c) ? take : spare)(c);
  }
  if (rules.maxSize !== null) {
    const order = candidates
      .filter((c) => !plan.remove.has(c.name))
      .sort(
        (a, b) =>
          Number(a.inKey) - Number(b.inKey) ||
          a.lastUse - b.lastUse ||
          b.size - a.size ||
          (a.name < b.name ? -1 : 1),
      );
    let total = plan.before.bytes - plan.removed.bytes;
    for (const c of order) {
      if (total <= rules.maxSize) break;
      if (!removable(c)) {
        spare(c);
        continue;
      }
      take(c);
      total -= c.size;
    }
  }
  plan.after = {
    entries: plan.before.entries - plan.removed.entries,
    bytes: plan.before.bytes - plan.removed.bytes,
  };
  return plan;
}

function tally(cs: TrimCandidate[]): Tally {
  return { entries: cs.length, bytes: cs.reduce((n, c) => n + c.size, 0) };
}
