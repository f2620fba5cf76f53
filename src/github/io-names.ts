/**
 * The action's inputs, outputs and saved state, named once. Names and meanings follow actions/cache
 * where they overlap; action.yml, restore/action.yml and save/action.yml declare them (a test checks).
 */
export const Inputs = {
  mode: "mode",
  profile: "profile",
  config: "config",
  store: "store",
  key: "key",
  restoreKeys: "restore-keys",
  path: "path",
  kind: "kind",
  lookupOnly: "lookup-only",
  failOnCacheMiss: "fail-on-cache-miss",
  saveAlways: "save-always",
  strict: "strict",
  ifChanged: "if-changed",
  /** Mode prewarm on a CPU runner: `kcache prewarm --cpu`, and its compile processes at once. */
  cpu: "cpu",
  workers: "workers",
  /** The persistent-runner settings for every cache (docs/self-hosted.md). */
  trustLocal: "trust-local",
  isolate: "isolate",
  maxSize: "max-size",
  /** Restore Triton caches lazily (kcache run's --lazy). */
  lazy: "lazy",
  /** Accepted so that workflows written for actions/cache do not warn; kcache does not use them. */
  uploadChunkSize: "upload-chunk-size",
  enableCrossOsArchive: "enableCrossOsArchive",
} as const;

export const Outputs = {
  cacheHit: "cache-hit",
  matchedKey: "cache-matched-key",
  primaryKey: "cache-primary-key",
  kernelsCompiled: "kernels-compiled",
  kernelsLoaded: "kernels-loaded",
  saved: "saved",
  prewarm: "prewarm",
  report: "report",
} as const;

/** What the main step leaves for its post step ($GITHUB_STATE, read back as STATE_<name>). */
export const State = {
  /** Set by every main step: the same bundle then knows it runs as the post step. */
  isPost: "isPost",
  /** "true" when the main step restored in the default mode and the post step is to save. */
  saveInPost: "saveInPost",
  primaryKey: "primaryKey",
} as const;

/**
 * Set for later steps when save-always is true: action.yml's post-if reads it
 * (`success() || env.KCACHE_SAVE_ALWAYS == 'true'`), because a post-if cannot read the action's inputs.
 */
export const SAVE_ALWAYS_ENV = "KCACHE_SAVE_ALWAYS";
