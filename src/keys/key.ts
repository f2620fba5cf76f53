import { UsageError } from "../errors.js";

/** GitHub's limit on cache keys; kcache keeps the same rules so keys move between stores. */
export const MAX_KEY_LENGTH = 512;

/** `<prefix>-<stackId>-<revision>`: the exact key a run saves under. */
export function primaryKey(prefix: string, stackId: string, revision: string): string {
  return checkKey(`${stackPrefix(prefix, stackId)}${revision}`);
}

/** `<prefix>-<stackId>-`: any revision of the same workload on the same stack. */
export function stackPrefix(prefix: string, stackId: string): string {
  return `${prefix}-${stackId}-`;
}

/** Throws a usage error when a key breaks GitHub's rules. */
export function checkKey(key: string): string {
  if (key.length > MAX_KEY_LENGTH) {
    throw new UsageError(
      `key is ${key.length} characters; GitHub allows ${MAX_KEY_LENGTH}: shorten key.prefix`,
    );
  }
  if (key.includes(","))
    throw new UsageError(`key "${key}" contains a comma, which GitHub cache keys cannot`);
  return key;
}

/** One step of the restore search: an exact key or a key prefix, within one scope. */
export interface LookupStep {
  scope: string;
  match: "exact" | "prefix";
  value: string;
}

/**
 * The restore order of actions/cache: in each readable scope (own first), the exact key, then the
 * newest key with the workload's stack prefix, then each configured restore prefix in order.
 */
export function restoreOrder(
  key: string,
  stackKeyPrefix: string,
  restorePrefixes: string[],
  readScopes: string[],
): LookupStep[] {
  const steps: LookupStep[] = [];
  for (const scope of readScopes) {
    steps.push({ scope, match: "exact", value: key });
    steps.push({ scope, match: "prefix", value: stackKeyPrefix });
    for (const p of restorePrefixes) steps.push({ scope, match: "prefix", value: p });
  }
  return steps;
}
