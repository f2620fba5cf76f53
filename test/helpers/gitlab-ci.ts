import { parse } from "yaml";

/*
 * The part of GitLab CI a generated file relies on, read as GitLab reads it: `extends` (hashes
 * merged deeply, anything else replaced), `!reference [job, key]` (its list spliced in), rules'
 * `if:` expressions of `$VAR` and "strings" joined by &&, and which jobs a pipeline's variables run.
 * Anything else in an expression is an error, not a guess.
 */

export type Job = {
  extends?: string;
  rules?: { if?: string; changes?: string[] }[];
  variables?: Record<string, string | { value: string }>;
  before_script?: unknown[];
  script?: unknown[];
  artifacts?: { when?: string; paths?: string[]; expire_in?: string };
  tags?: string[];
  stage?: string;
  [k: string]: unknown;
};

const reference = {
  tag: "!reference",
  collection: "seq" as const,
  resolve: (seq: unknown) => ({ reference: (seq as { toJSON(): string[] }).toJSON() }),
};

/** A GitLab CI file's jobs (hidden ones too), with extends and !reference resolved. */
export function gitlabJobs(text: string): Record<string, Job> {
  const raw = parse(text, { customTags: [reference] }) as Record<string, Job>;
  const resolved: Record<string, Job> = {};
  const resolve = (name: string): Job => {
    const cached = resolved[name];
    if (cached) return cached;
    const job = raw[name];
    if (!job) throw new Error(`no job ${name}`);
    const base = job.extends ? resolve(job.extends) : {};
    const { extends: _, ...own } = job;
    resolved[name] = merge(base, own) as Job;
    return resolved[name];
  };
  for (const name of Object.keys(raw)) resolve(name);
  // Before inputs are filled in, a list may still be `$[[ inputs.x ]]`: left as it is.
  const splice = (list: unknown[] | undefined): unknown[] | undefined =>
    !Array.isArray(list)
      ? list
      : list.flatMap((item) => {
          if (item && typeof item === "object" && "reference" in item) {
            const [job, key] = (item as { reference: string[] }).reference as [string, string];
            return splice((resolved[job]?.[key] as unknown[]) ?? []) ?? [];
          }
          return [item];
        });
  for (const job of Object.values(resolved)) {
    job.before_script = splice(job.before_script);
    job.script = splice(job.script);
  }
  return resolved;
}

function merge(a: unknown, b: unknown): unknown {
  if (!isHash(a) || !isHash(b)) return b;
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in a ? merge(a[k], v) : v;
  return out;
}

function isHash(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** A rule's `if:` under these variables: `$A == "x" && $B == $C`, as GitLab compares (unset is null). */
export function ruleMatches(expression: string, vars: Record<string, string | undefined>): boolean {
  return expression.split("&&").every((part) => {
    const m = /^\s*(\S+)\s*(==|!=)\s*(\S+)\s*$/.exec(part);
    if (!m) throw new Error(`not an expression this reader knows: ${part}`);
    const value = (operand: string) => {
      if (operand.startsWith("$")) return vars[operand.slice(1)] ?? null;
      const s = /^"(.*)"$/.exec(operand);
      if (!s) throw new Error(`not an operand this reader knows: ${operand}`);
      return s[1] as string;
    };
    const equal = value(m[1] as string) === value(m[3] as string);
    return m[2] === "==" ? equal : !equal;
  });
}

/** The jobs a pipeline with these variables runs: those whose first matching rule exists. */
export function jobsRun(jobs: Record<string, Job>, vars: Record<string, string | undefined>): string[] {
  return Object.keys(jobs).filter(
    (name) => !name.startsWith(".") && (jobs[name]?.rules ?? []).some((r) => r.if && ruleMatches(r.if, vars)),
  );
}

/** A job's shell text (before_script then script, one shell), and its variables under the project's. */
export function jobShell(job: Job): { text: string; variables: Record<string, string> } {
  const variables: Record<string, string> = {};
  for (const [k, v] of Object.entries(job.variables ?? {}))
    variables[k] = typeof v === "string" ? v : String(v.value);
  const lines = [...(job.before_script ?? []), ...(job.script ?? [])].map(String);
  return { text: `${lines.join("\n")}\n`, variables };
}

/** GitLab's predefined variables for a pipeline of project 10 whose default branch is main. */
export function gitlabVariables(sha: string, kind: "push" | "schedule" | "merge_request", iid = "3") {
  const common = {
    CI: "true",
    GITLAB_CI: "true",
    CI_PROJECT_ID: "10",
    CI_DEFAULT_BRANCH: "main",
    CI_COMMIT_SHA: sha,
    CI_PIPELINE_ID: String(Math.floor(Math.random() * 1e6)),
  };
  if (kind === "merge_request")
    return {
      ...common,
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_MERGE_REQUEST_IID: iid,
      CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "10",
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
      CI_COMMIT_REF_NAME: "feature",
    };
  return {
    ...common,
    CI_PIPELINE_SOURCE: kind,
    CI_COMMIT_BRANCH: "main",
    CI_COMMIT_REF_NAME: "main",
  };
}
