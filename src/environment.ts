/**
 * Every environment variable kcache reads, named once, and the one place below job/ where the
 * process's environment is taken. job/ reads the environment into the job once (the store, the
 * revision, the scopes, the thread count and the Zstandard engine); below job/ code works on the
 * values it is given. test/architecture/environment.test.ts checks that every variable read in src/
 * is in this table and that nothing below job/ touches `process.env` but this file.
 */
export const ENVIRONMENT_VARIABLES = {
  // kcache's own.
  KCACHE_CONFIG: "the kcache.yml to read (--config wins)",
  KCACHE_STORE: "the store when kcache.yml names none: a folder, s3://bucket/prefix or gha",
  KCACHE_S3_ENDPOINT: "an S3-compatible endpoint for s3:// stores (MinIO, R2, Ceph)",
  KCACHE_S3_REGION: "the S3 region (else AWS_REGION, AWS_DEFAULT_REGION, us-east-1)",
  KCACHE_S3_PATH_STYLE: "1 or true: path-style S3 URLs",
  KCACHE_S3_CHECKSUMS: "when-required: no optional S3 checksums (stores that refuse them)",
  KCACHE_READ_ONLY:
    "1 (or any value but 0, false, no, off): read-only mode, restore and never write the store (as --read-only)",
  KCACHE_GITHUB_TOKEN: "a token for GitHub's cache REST API (listing, deleting), else GITHUB_TOKEN",
  KCACHE_STATE_DIR: "where kcache keeps its local state (else $RUNNER_TEMP/kcache or ~/.cache/kcache-state)",
  KCACHE_THREADS: "the threads restores and saves may use (a whole number; else one per core, capped)",
  KCACHE_ZSTD: "the Zstandard engine: napi, zlib, system or wasm (else the best that works)",
  KCACHE_ASCEND_ROOT: "where the Ascend probe looks for the driver and CANN (tests)",
  KCACHE_NVIDIA_PROC: "where the NVIDIA probe reads the driver version (tests)",
  KCACHE_SAVE_ALWAYS: "set by the action for its post step: save even when the job failed",
  KCACHE_LAZY_SOCKET:
    "set by kcache run and the action's restore step for the job's processes: the Unix socket kcache's hook asks for entries left in the store (restore: lazy) and tells of entries written (store.live); the save step stops what serves it",
  KCACHE_LAZY_WAIT:
    "set beside KCACHE_LAZY_SOCKET: the seconds the hook waits for a lookup (the store's idle timeout and a little)",
  KCACHE_LIVE:
    "set beside KCACHE_LAZY_SOCKET under store.live: the hook tells kcache of each entry the job writes",
  KCACHE_NODE_OPTIONS:
    "set by the wheel's launcher: the job's NODE_OPTIONS, which the commands kcache runs get back (the single executable cannot start under V8 flags there)",
  KCACHE_LOOKUP_DAEMON:
    "set by the action's restore step for the process it starts to serve the job's lookups until the save step",
  // GitHub Actions'.
  GITHUB_ACTIONS: "true inside GitHub Actions: warnings become annotations",
  GITHUB_SHA: "the revision a key is made for",
  GITHUB_REF: "the branch or pull request, for the scope a save writes",
  GITHUB_BASE_REF: "a pull request's base branch, a scope it may read",
  GITHUB_EVENT_NAME: "push, pull_request, schedule...: scopes and prewarm",
  GITHUB_EVENT_PATH: "the event payload: the default branch, a pull request's head",
  GITHUB_RUN_ID: "names run records",
  GITHUB_REPOSITORY: "owner/name, for the cache REST API and workflows",
  GITHUB_API_URL: "GitHub's REST API (GitHub Enterprise)",
  GITHUB_TOKEN: "the cache REST API's token when KCACHE_GITHUB_TOKEN is unset",
  GITHUB_OUTPUT: "where step outputs are written",
  GITHUB_STEP_SUMMARY: "where the job summary is written",
  GITHUB_STATE: "what the action's main step leaves for its post step",
  GITHUB_ENV: "where `kcache restore` points later steps at a job's own cache folders (isolate)",
  ACTIONS_RUNTIME_TOKEN: "the runner's token for its cache service",
  ACTIONS_RESULTS_URL: "the cache service (v2, twirp)",
  ACTIONS_CACHE_URL: "the cache service (v1): its presence means one is offered",
  RUNNER_TEMP: "the runner's temporary folder: local state, run output",
  RUNNER_ENVIRONMENT:
    "github-hosted: the machine runs this one job, so no other job writes its cache folders (a save attributes nothing)",
  // Others'.
  HOME: "the default store, state and interpolation of ~",
  PATH: "where python, zstd and sourced scripts are found",
  PYTHONPATH: "extended with the telemetry hook for the job's commands",
  AWS_REGION: "the S3 region when KCACHE_S3_REGION is unset",
  AWS_DEFAULT_REGION: "the S3 region when AWS_REGION is unset",
  ASCEND_HOME_PATH: "CANN's install, set by its set_env.sh",
  ASCEND_TOOLKIT_HOME: "CANN's toolkit, set by its set_env.sh",
  // Triton-Ascend's compile options outside its kernel key: key parts when set (stack/fingerprint.ts).
  TRITON_ENABLE_SANITIZER: "a Triton-Ascend compile option: a key part when set",
  TRITON_ALL_BLOCKS_PARALLEL: "a Triton-Ascend compile option: a key part when set",
  ENABLE_PRINT_UB_BITS: "a Triton-Ascend compile option: a key part when set",
  TRITON_MEMORY_DISPLAY: "a Triton-Ascend compile option: a key part when set",
  TRITON_ENABLE_LIBDEVICE_SIMT: "a Triton-Ascend compile option: a key part when set",
  TRITON_DISABLE_FFTS: "a Triton-Ascend compile option: a key part when set",
  // Other CIs' (keys/ci-systems.ts, keys/run-identity.ts): what a build is, for its scope.
  CI: "set by most CIs: a CI whose variables kcache does not read is an untrusted build",
  CONTINUOUS_INTEGRATION: "a CI runs this (as CI)",
  BUILD_ID: "a CI's build id (as CI): names an untrusted build's scope",
  BUILD_NUMBER: "a CI's build number (as CI): names an untrusted build's scope",
  RUN_ID: "a CI's run id (as CI)",
  CI_APP_ID: "a CI runs this (as CI)",
  CI_BUILD_ID: "a CI's build id (as CI)",
  CI_BUILD_NUMBER: "a CI runs this (as CI)",
  CI_NAME: "a CI runs this (as CI)",
  GITLAB_CI: "set by GitLab CI",
  CI_PIPELINE_SOURCE: "GitLab: what made the pipeline (push, schedule, merge_request_event...)",
  CI_MERGE_REQUEST_IID: "GitLab: the merge request's number: its scope pr/<iid>",
  CI_MERGE_REQUEST_ID: "GitLab: a merge request's global id (a merge request pipeline)",
  CI_MERGE_REQUEST_SOURCE_PROJECT_ID:
    "GitLab: the merge request's source project (a fork when not CI_PROJECT_ID)",
  CI_PROJECT_ID: "GitLab: the project the pipeline runs in",
  CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "GitLab: the merge request's target branch, a scope it reads",
  CI_EXTERNAL_PULL_REQUEST_IID: "GitLab: an external (GitHub) pull request's number",
  CI_EXTERNAL_PULL_REQUEST_TARGET_BRANCH_NAME: "GitLab: an external pull request's target branch",
  CI_COMMIT_BRANCH: "GitLab: the branch of a branch pipeline (unset for merge requests and tags)",
  CI_COMMIT_TAG: "GitLab: the tag of a tag pipeline",
  CI_COMMIT_REF_NAME: "GitLab: the branch or tag built, checked against CI_COMMIT_BRANCH",
  CI_DEFAULT_BRANCH: "GitLab: the project's default branch",
  CI_COMMIT_SHA: "GitLab: the commit built (the revision outside a checkout)",
  CI_PIPELINE_ID: "GitLab: names an untrusted build's scope",
  BUILDKITE: "set by Buildkite",
  BUILDKITE_PULL_REQUEST: "Buildkite: the pull request's number, or false",
  BUILDKITE_PULL_REQUEST_REPO: "Buildkite: the pull request's repository (a fork when not BUILDKITE_REPO)",
  BUILDKITE_PULL_REQUEST_BASE_BRANCH: "Buildkite: the pull request's base branch, a scope it reads",
  BUILDKITE_REPO: "Buildkite: the pipeline's repository",
  BUILDKITE_BRANCH: "Buildkite: the branch built",
  BUILDKITE_TAG: "Buildkite: the tag built",
  BUILDKITE_PIPELINE_DEFAULT_BRANCH: "Buildkite: the pipeline's default branch",
  BUILDKITE_SOURCE: "Buildkite: what made the build (webhook, schedule, ui...)",
  BUILDKITE_COMMIT: "Buildkite: the commit built (the revision outside a checkout)",
  BUILDKITE_BUILD_ID: "Buildkite: names an untrusted build's scope",
  JENKINS_URL: "set by Jenkins",
  JENKINS_HOME: "set by Jenkins",
  CHANGE_ID:
    "Jenkins multibranch: a change request's number: its scope pr/<id> (any CHANGE_* variable set makes a change build)",
  CHANGE_TARGET: "Jenkins multibranch: a change request's base branch, a scope it reads",
  CHANGE_FORK: "Jenkins multibranch: set when the change comes from a fork",
  CHANGE_BRANCH: "Jenkins multibranch: a change request's source branch",
  BRANCH_NAME: "Jenkins multibranch: the branch built",
  BRANCH_IS_PRIMARY: "Jenkins multibranch: true for the default branch",
  TAG_NAME: "Jenkins multibranch: the tag built",
  GIT_BRANCH: "Jenkins: a freestyle job's branch (a hint a declared scope may agree with)",
  GIT_COMMIT: "Jenkins: the commit built (the revision outside a checkout)",
  BUILD_TAG: "Jenkins: names an untrusted build's scope",
  // Other systems' markers, as env-ci detects them (keys/ci-other.ts): beside another system's variables, untrusted.
  APPVEYOR: "set by AppVeyor: with another system's variables, an untrusted build",
  BUILD_BUILDURI: "set by Azure Pipelines: with another system's variables, an untrusted build",
  BITBUCKET_BUILD_NUMBER: "set by Bitbucket Pipelines: with another system's variables, an untrusted build",
  BITRISE_IO: "set by Bitrise: with another system's variables, an untrusted build",
  BUDDY_WORKSPACE_ID: "set by Buddy: with another system's variables, an untrusted build",
  CIRCLECI: "set by CircleCI: with another system's variables, an untrusted build",
  CIRRUS_CI: "set by Cirrus CI: with another system's variables, an untrusted build",
  CF_PAGES: "set by Cloudflare Pages (when 1): with another system's variables, an untrusted build",
  CODEBUILD_BUILD_ID: "set by AWS CodeBuild: with another system's variables, an untrusted build",
  CF_BUILD_ID: "set by Codefresh: with another system's variables, an untrusted build",
  DRONE: "set by Drone: with another system's variables, an untrusted build",
  JB_SPACE_EXECUTION_NUMBER: "set by JetBrains Space: with another system's variables, an untrusted build",
  NETLIFY: "set by Netlify (when true): with another system's variables, an untrusted build",
  DISTELLI_APPNAME: "set by Puppet: with another system's variables, an untrusted build",
  SAILCI: "set by Sail CI: with another system's variables, an untrusted build",
  SCREWDRIVER: "set by Screwdriver.cd: with another system's variables, an untrusted build",
  SCRUTINIZER: "set by Scrutinizer: with another system's variables, an untrusted build",
  SEMAPHORE: "set by Semaphore: with another system's variables, an untrusted build",
  SHIPPABLE: "set by Shippable: with another system's variables, an untrusted build",
  TEAMCITY_VERSION: "set by TeamCity: with another system's variables, an untrusted build",
  TRAVIS: "set by Travis CI: with another system's variables, an untrusted build",
  VELA: "set by Vela: with another system's variables, an untrusted build",
  VERCEL: "set by Vercel: with another system's variables, an untrusted build",
  NOW_GITHUB_DEPLOYMENT: "set by Vercel: with another system's variables, an untrusted build",
  WERCKER_MAIN_PIPELINE_STARTED: "set by Wercker: with another system's variables, an untrusted build",
  // Compilers' folders: the variable that points a job at a `kind: auto` path (job/path-lines.ts).
  TRITON_CACHE_DIR: "Triton's cache folder",
  TRITON_HOME: "Triton's home (its default cache is $TRITON_HOME/.triton/cache)",
  TORCHINDUCTOR_CACHE_DIR: "Inductor's cache folder",
  TMPDIR: "where Inductor's default cache folder is",
  USER: "names Inductor's default cache folder (torchinductor_<user>)",
  LOGNAME: "names Inductor's default cache folder when USER is unset",
} as const;

export type EnvironmentVariable = keyof typeof ENVIRONMENT_VARIABLES;

/** The process's environment, for job/ to read into the job and for what runs before a job exists. */
export function hostEnvironment(): NodeJS.ProcessEnv {
  return process.env;
}

/**
 * NODE_OPTIONS as the job had it, where a launcher moved it aside: Node reads NODE_OPTIONS before
 * any of kcache's code runs, and V8 flags there (--max-old-space-size, common in CI) stop the single
 * executable from loading its start-up snapshot. The wheel's launcher moves it into
 * KCACHE_NODE_OPTIONS; the commands kcache runs get it back as NODE_OPTIONS.
 */
export function restoreMovedNodeOptions(): void {
  const moved = process.env.KCACHE_NODE_OPTIONS;
  if (moved === undefined) return;
  delete process.env.KCACHE_NODE_OPTIONS;
  process.env.NODE_OPTIONS = moved;
}

/** The AWS SDK's notice that Node 20 is old: kcache supports Node 20 on purpose, it is not the user's to act on. */
export function quietAwsSdkNotice(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
}

/** How restores and saves use this machine: read from the environment once, into the job. */
export interface RuntimeSettings {
  /** $KCACHE_THREADS when a whole number above 0; null: one per core, capped. */
  threads: number | null;
  /** $KCACHE_ZSTD as given ("" when unset): the engine to use, checked when one is first needed. */
  zstd: string;
  /** The CI says this machine runs this one job (RUNNER_ENVIRONMENT=github-hosted): no other job writes its folders. */
  ephemeral?: boolean;
  /** The CI says the machine keeps its folders between jobs (GitHub's self-hosted runners). */
  persistent?: boolean;
}

/** $KCACHE_THREADS as a whole number above 0, or null (unset, or a value kcache does not understand). */
function threadsAsked(value: string | undefined): number | null {
  const asked = Number(value);
  return Number.isInteger(asked) && asked > 0 ? asked : null;
}

/** $KCACHE_S3_PATH_STYLE: true for 1 or true, false for 0, false or unset, null for anything else. */
function pathStyleAsked(value: string | undefined): boolean | null {
  if (value === "1" || value === "true") return true;
  return !value || value === "0" || value === "false" ? false : null;
}

export function runtimeSettings(env: NodeJS.ProcessEnv): RuntimeSettings {
  return {
    threads: threadsAsked(env.KCACHE_THREADS),
    zstd: env.KCACHE_ZSTD ?? "",
    ephemeral: env.RUNNER_ENVIRONMENT === "github-hosted",
    persistent: env.RUNNER_ENVIRONMENT === "self-hosted",
  };
}

/**
 * Each of kcache's variables set to a value kcache does not understand, with what it does instead and
 * the fix: a misspelt value is said once, never silently taken for the default.
 */
export function environmentMistakes(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  if (env.KCACHE_THREADS?.trim() && threadsAsked(env.KCACHE_THREADS) === null)
    out.push(
      `KCACHE_THREADS=${JSON.stringify(env.KCACHE_THREADS)} is not a whole number above 0: kcache uses one thread per core (capped); set it to a number such as 4, or unset it`,
    );
  if (pathStyleAsked(env.KCACHE_S3_PATH_STYLE) === null)
    out.push(
      `KCACHE_S3_PATH_STYLE=${JSON.stringify(env.KCACHE_S3_PATH_STYLE)} is not 1, true, 0 or false: kcache uses virtual-hosted S3 URLs; set it to 1 for path-style URLs (MinIO, Ceph), or unset it`,
    );
  if (env.KCACHE_S3_CHECKSUMS && s3Environment(env).checksums === undefined)
    out.push(
      `KCACHE_S3_CHECKSUMS=${JSON.stringify(env.KCACHE_S3_CHECKSUMS)} is not when-required: kcache sends the SDK's optional checksums; set it to when-required for stores that refuse them, or unset it`,
    );
  return out;
}

/**
 * "KCACHE_READ_ONLY=1" where $KCACHE_READ_ONLY asks for read-only mode, else null. Any value but an
 * empty one, 0, false, no or off asks: a misspelt "ture" errs on the side of writing nothing.
 */
export function readOnlyRequested(env: NodeJS.ProcessEnv): string | null {
  const v = env.KCACHE_READ_ONLY?.trim();
  if (!v || /^(0|false|no|off)$/i.test(v)) return null;
  return `KCACHE_READ_ONLY=${v}`;
}

/** S3 settings an s3:// URL cannot carry ($KCACHE_STORE, --store), and the region fallback for every S3 store. */
export interface S3Environment {
  region: string;
  endpoint: string | undefined;
  pathStyle: boolean;
  checksums: "when-required" | undefined;
}

export function s3Environment(env: NodeJS.ProcessEnv): S3Environment {
  return {
    region: env.KCACHE_S3_REGION ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? "us-east-1",
    endpoint: env.KCACHE_S3_ENDPOINT || undefined,
    pathStyle: pathStyleAsked(env.KCACHE_S3_PATH_STYLE) === true,
    checksums: env.KCACHE_S3_CHECKSUMS === "when-required" ? "when-required" : undefined,
  };
}

/** What GitHub's cache store needs from the runner: its cache service, and the REST API for listing and deleting. */
export interface GhaEnvironment {
  resultsUrl: string | undefined;
  runtimeToken: string | undefined;
  /** Whether the runner offers a cache service at all (v2's results URL or v1's cache URL, with a token). */
  offered: boolean;
  restToken: string | undefined;
  repository: string | undefined;
  apiUrl: string;
}

export function ghaEnvironment(env: NodeJS.ProcessEnv): GhaEnvironment {
  return {
    resultsUrl: env.ACTIONS_RESULTS_URL,
    runtimeToken: env.ACTIONS_RUNTIME_TOKEN,
    offered: Boolean(env.ACTIONS_RUNTIME_TOKEN && (env.ACTIONS_RESULTS_URL || env.ACTIONS_CACHE_URL)),
    restToken: env.KCACHE_GITHUB_TOKEN || env.GITHUB_TOKEN,
    repository: env.GITHUB_REPOSITORY,
    apiUrl: (env.GITHUB_API_URL || "https://api.github.com").replace(/\/$/, ""),
  };
}
