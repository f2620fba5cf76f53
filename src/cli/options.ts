/** Options every command takes (declared once in cli/main.ts, read by each command). */
export interface GlobalOptions {
  config?: string;
  /** --strict alone (true), or the fault codes it names. */
  strict?: boolean | string;
  json?: boolean;
  verbose?: boolean;
  quiet?: boolean;
  revision?: string;
  /** This build's declared scope (restore, save, key, run): kcache.yml's key.scope. */
  scope?: string;
  /** Overrides of kcache.yml (the action's inputs of the same names): see job/build-job.ts. */
  store?: string;
  path?: string[];
  kind?: string;
  key?: string;
  restoreKey?: string[];
  /** A profile of kcache.yml (restore, save and key; run names it with the same flag). */
  profile?: string;
  /** A persistent runner's settings for every cache (kcache.yml's isolate, trust-local, max-size). */
  isolate?: boolean;
  trustLocal?: boolean;
  maxSize?: string;
  /** Restore Triton caches lazily (kcache.yml's restore: lazy). */
  lazy?: boolean;
}
