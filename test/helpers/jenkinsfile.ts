/*
 * A reader for the declarative Jenkinsfiles kcache writes, structural rather than complete: the
 * pipeline's directives, each stage's `when` (expression on env.X == 'v', triggeredBy, branch,
 * changeRequest(), not, allOf, anyOf; beforeAgent), its agent, its credential bindings, whether its
 * steps are in catchError, and its `sh '''...'''` text (Groovy's escapes undone), the stages a stage
 * holds in its place, the cron trigger and the archived patterns. Anything else in a `when` is an
 * error, not a guess.
 */

export type Condition =
  | { expression: { name: string; op: "==" | "!="; value: string } }
  | { triggeredBy: string }
  | { branch: string }
  | { changeRequest: true }
  | { not: Condition }
  | { allOf: Condition[] }
  | { anyOf: Condition[] };

export interface Binding {
  credentialsId: string;
  usernameVariable: string;
  passwordVariable: string;
}

export interface Stage {
  name: string;
  when: Condition | null;
  credentials: Binding[];
  sh: string[];
  /** The agent it runs on: its own, or its parent stage's (`agent none` for the pipeline's). */
  agent: string;
  /** Its steps are inside catchError(buildResult: 'SUCCESS', ...): a failure leaves the build passing. */
  catchError: boolean;
  /** The stage that holds it (nested `stages { }`), or null. */
  parent: string | null;
}

export interface Jenkinsfile {
  agent: string;
  cron: string | null;
  environment: Record<string, string>;
  stages: Stage[];
  archived: string[];
  alwaysArchived: boolean;
}

/** Index of the `}` closing the `{` at `open`, skipping Groovy strings and // comments. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text.startsWith("'''", i)) {
      i = text.indexOf("'''", i + 3) + 2;
      continue;
    }
    const ch = text[i];
    if (ch === "'" || ch === '"') {
      let j = i + 1;
      while (text[j] !== ch) j += text[j] === "\\" ? 2 : 1;
      i = j;
    } else if (ch === "/" && text[i + 1] === "/") i = text.indexOf("\n", i);
    else if (ch === "{") depth++;
    else if (ch === "}" && --depth === 0) return i;
  }
  throw new Error(`no closing brace for the one at ${open}`);
}

/** The bodies of every `<name> {` block directly in `text` (not inside another block). */
function blocks(text: string, name: RegExp): { head: string; body: string }[] {
  const out: { head: string; body: string }[] = [];
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf("{", i);
    if (open < 0) break;
    const head = text.slice(text.lastIndexOf("\n", open) + 1, open).trim();
    const end = closing(text, open);
    if (name.test(head)) out.push({ head, body: text.slice(open + 1, end) });
    i = end + 1;
  }
  return out;
}

function only(text: string, name: RegExp): string {
  const found = blocks(text, name);
  if (found.length !== 1) throw new Error(`expected one ${name} block, found ${found.length}`);
  return (found[0] as { body: string }).body;
}

/** Groovy's '...' and '''...''' escapes undone: \\ and \' (the only ones kcache writes). */
function groovyText(s: string): string {
  return s.replace(/\\([\\'n])/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function condition(text: string): Condition {
  const t = text.trim();
  const nested = /^(not|allOf|anyOf)\s*\{([\s\S]*)\}$/.exec(t);
  if (nested) {
    const inner = conditions(nested[2] as string);
    if (nested[1] === "not") {
      if (inner.length !== 1) throw new Error(`not { } holds one condition: ${t}`);
      return { not: inner[0] as Condition };
    }
    return nested[1] === "allOf" ? { allOf: inner } : { anyOf: inner };
  }
  const expr = /^expression\s*\{\s*env\.(\w+)\s*(==|!=)\s*'([^']*)'\s*\}$/.exec(t);
  if (expr) return { expression: { name: expr[1] as string, op: expr[2] as "==", value: expr[3] as string } };
  const trigger = /^triggeredBy\s+'(\w+)'$/.exec(t);
  if (trigger) return { triggeredBy: trigger[1] as string };
  const branch = /^branch\s+'([^']+)'$/.exec(t);
  if (branch) return { branch: branch[1] as string };
  if (t === "changeRequest()") return { changeRequest: true };
  throw new Error(`a when condition this reader does not know: ${t}`);
}

/** The conditions of a block, one a statement (a line, or a nested block). */
function conditions(body: string): Condition[] {
  const out: string[] = [];
  let i = 0;
  const text = body.trim();
  while (i < text.length) {
    const nl = text.indexOf("\n", i);
    const open = text.indexOf("{", i);
    const lineEnd = nl < 0 ? text.length : nl;
    const end = open >= 0 && open < lineEnd ? closing(text, open) + 1 : lineEnd;
    const statement = text.slice(i, end).trim();
    // beforeAgent says when the condition is evaluated (before the stage's agent is allocated), not what.
    if (statement && statement !== "beforeAgent true") out.push(statement);
    i = end + 1;
  }
  return out.map(condition);
}

/** Whether a stage's `when` lets a build with these variables, started by `trigger`, run it. */
export function stageRuns(
  c: Condition | null,
  env: Record<string, string | undefined>,
  trigger: string,
): boolean {
  if (!c) return true;
  if ("expression" in c) {
    const equal = (env[c.expression.name] ?? null) === c.expression.value;
    return c.expression.op === "==" ? equal : !equal;
  }
  if ("triggeredBy" in c) return c.triggeredBy === trigger;
  if ("branch" in c) return env.BRANCH_NAME === c.branch;
  if ("changeRequest" in c) return Boolean(env.CHANGE_ID);
  if ("not" in c) return !stageRuns(c.not, env, trigger);
  if ("allOf" in c) return c.allOf.every((x) => stageRuns(x, env, trigger));
  return c.anyOf.some((x) => stageRuns(x, env, trigger));
}

/** A block's own `agent` directive (none, any, { label '...' }), not one of the blocks it holds. */
function agentOf(body: string): string | null {
  const lines = body.split("\n").filter((l) => l.trim());
  const depth = Math.min(...lines.map((l) => l.length - l.trimStart().length));
  const own = lines.find((l) => l.length - l.trimStart().length === depth && /^\s*agent\s/.test(l));
  return own ? (/^\s*agent\s+(none|any|\{[^}]*\})\s*$/.exec(own)?.[1] ?? null) : null;
}

/** The stages in a `stages { }` block, in order, a stage holding `stages { }` replaced by those it holds. */
function readStages(text: string, agent: string, parent: string | null): Stage[] {
  return blocks(text, /^stage\(/).flatMap(({ head, body }) => {
    const name = groovyText(/^stage\('((?:[^'\\]|\\.)*)'\)$/.exec(head)?.[1] ?? "");
    const own = agentOf(body) ?? agent;
    const nested = blocks(body, /^stages$/)[0];
    if (nested) return readStages(nested.body, own, name);
    const when = blocks(body, /^when$/)[0];
    const steps = only(body, /^steps$/);
    const credentials = [
      ...steps.matchAll(
        /usernamePassword\(credentialsId: '([^']+)', usernameVariable: '(\w+)', passwordVariable: '(\w+)'\)/g,
      ),
    ].map((m) => ({ credentialsId: m[1], usernameVariable: m[2], passwordVariable: m[3] }) as Binding);
    const sh = [...steps.matchAll(/sh '''\n([\s\S]*?)'''/g)].map((m) => groovyText(m[1] as string));
    const cond = when ? conditions(when.body) : [];
    if (cond.length > 1) throw new Error(`stage ${name}: more than one condition outside allOf`);
    const catchError = /^\s*catchError\(buildResult: 'SUCCESS', stageResult: 'FAILURE'\) \{/m.test(steps);
    return [{ name, when: cond[0] ?? null, credentials, sh, agent: own, catchError, parent }];
  });
}

/** A declarative Jenkinsfile's parts. */
export function readJenkinsfile(text: string): Jenkinsfile {
  const pipeline = only(text, /^pipeline$/);
  const agent = agentOf(pipeline) ?? "";
  const cron = /^\s*triggers\s*\{\s*cron\(env\.BRANCH_IS_PRIMARY == 'true' \? '([^']*)' : ''\)\s*\}/m.exec(
    pipeline,
  )?.[1];
  const environment: Record<string, string> = {};
  for (const m of only(pipeline, /^environment$/).matchAll(/(\w+)\s*=\s*'((?:[^'\\]|\\.)*)'/g))
    environment[m[1] as string] = groovyText(m[2] as string);
  const stages = readStages(only(pipeline, /^stages$/), agent, null);
  // post { always { archiveArtifacts } }: the pipeline's, or (agent none) the stage holding the job's stages'.
  const posts = [pipeline, ...blocks(only(pipeline, /^stages$/), /^stage\(/).map((b) => b.body)].flatMap(
    (t) => blocks(t, /^post$/),
  );
  const always = posts.map((p) => blocks(p.body, /^always$/)[0]?.body ?? "").join("\n");
  const quotedArchive = /archiveArtifacts artifacts: '((?:[^'\\]|\\.)*)'/.exec(always)?.[1];
  const archived = quotedArchive === undefined ? undefined : groovyText(quotedArchive);
  return {
    agent,
    cron: cron === undefined ? null : groovyText(cron),
    environment,
    stages,
    archived: archived ? archived.split(/,\s*/) : [],
    alwaysArchived: Boolean(archived),
  };
}

/** Jenkins multibranch's variables: a branch build of main, its timer's build, or change request 5's. */
export function jenkinsVariables(sha: string, kind: "branch" | "timer" | "change"): Record<string, string> {
  const common = {
    JENKINS_URL: "https://ci.example.org/",
    BUILD_TAG: `jenkins-kernels-${Math.floor(Math.random() * 1e6)}`,
    GIT_COMMIT: sha,
  };
  return kind === "change"
    ? { ...common, BRANCH_NAME: "PR-5", CHANGE_ID: "5", CHANGE_TARGET: "main", CHANGE_BRANCH: "feature" }
    : { ...common, BRANCH_NAME: "main", BRANCH_IS_PRIMARY: "true" };
}
