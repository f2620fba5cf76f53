import type { GeneratedWorkflow } from "../github/workflows.js";
import { cpuPrewarmComment } from "./cpu-prewarm-jobs.js";
import { headerLines, installLines, type PipelineParts, readOnlyLines } from "./pipeline-parts.js";

/** The Jenkins credential (Username with password: access key id, secret key) bound on the default branch. */
export const JENKINS_CREDENTIAL = "kcache-store-writer";
const PRIMARY = "expression { env.BRANCH_IS_PRIMARY == 'true' }";
const TIMER = "triggeredBy 'TimerTrigger'";

/** Text inside a Groovy '''...''' string: backslashes doubled, and a `'''` in it escaped (\'\'\') so it ends nothing. */
function groovy(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/'''/g, "\\'\\'\\'");
}

/** A Groovy '...' string, which cannot span lines: its quotes and line ends escaped too. */
function quoted(s: string): string {
  const text = s.replace(/\\/g, "\\\\").replace(/'/g, "\\'");
  return `'${text.replace(/\r/g, "\\r").replace(/\n/g, "\\n")}'`;
}

/**
 * A profile's declarative Jenkinsfile for a multibranch pipeline: the job (`kcache run`) on every
 * build but the timer's, the prewarm (`kcache prewarm`) on the default branch's timer, the reports
 * and result files archived whether the build passed or not. With an S3 store the store's write key
 * (credential kcache-store-writer) is bound only on the default branch (BRANCH_IS_PRIMARY); other
 * builds, change requests among them, restore only (KCACHE_READ_ONLY=1). With github.cpu-prewarm, a
 * stage before them on change requests runs `kcache prewarm --cpu` on a CPU agent of its own, its
 * failure caught (the stage marked failed, the build not): the job's stages then run on their agent
 * in a stage of their own, so the GPU agent is not held while the CPU one compiles.
 */
export function jenkinsPipeline(p: PipelineParts, command: string, configPath: string): GeneratedWorkflow {
  const file = `Jenkinsfile.kcache-${p.id}`;
  const cron = p.cron ? (p.timezone ? `TZ=${p.timezone}\\n${p.cron}` : p.cron) : null;
  const archived = [...p.artifacts, ...p.prewarmArtifacts].map((a) => (a.endsWith("/") ? `${a}**` : a));
  const label = p.profile.jenkins?.label;
  const agent = label ? `agent { label ${quoted(label)} }` : "agent any";
  const timeout = `options { timeout(time: ${p.timeoutMinutes}, unit: 'MINUTES') }`;
  const post = [
    "post {",
    ...indent([
      `always { archiveArtifacts artifacts: ${quoted(archived.join(", "))}, allowEmptyArchive: true }`,
    ]),
    "}",
  ];
  const settings = [
    ...(cron ? [`triggers { cron(env.BRANCH_IS_PRIMARY == 'true' ? '${cron}' : '') }`] : []),
    `environment { KCACHE_VERSION = ${quoted(p.version)} }`,
  ];
  const stages = jobStages(p);
  const body = p.cpuPrewarm
    ? [
        "agent none",
        ...settings,
        "stages {",
        ...indent([
          ...cpuPrewarmStage(p, p.cpuPrewarm),
          `stage(${quoted(`${p.profileName} jobs`)}) {`,
          ...indent([agent, timeout, "stages {", ...indent(stages), "}", ...post]),
          "}",
        ]),
        "}",
      ]
    : [agent, timeout, ...settings, "stages {", ...indent(stages), "}", ...post];
  const comments = [
    ...headerLines(`kcache: ${p.profileName} on Jenkins`, command, configPath),
    `A multibranch pipeline whose Script Path is ${file}.`,
    "kcache: $KCACHE_VERSION's single executable, unless kcache is on PATH or KCACHE_INSTALL (an",
    "environment variable of the agent or folder) says how to install it: pip install <the release's wheel>, true.",
    ...(p.s3
      ? [
          `The store's write key: a Username with password credential ${JENKINS_CREDENTIAL} (access key id,`,
          "secret key), bound only on the default branch; other builds restore only (KCACHE_READ_ONLY=1),",
          "reading with KCACHE_READER_* from the agent's environment or the agent's own credentials.",
        ]
      : []),
    p.cron
      ? "The prewarm runs on the default branch's timer (the cron below, in its TZ)."
      : "The prewarm runs when the default branch's build is started by a timer: add github.prewarm.cron to kcache.yml, or a trigger of your own.",
    ...cpuPrewarmComment(p, "change requests", `the stage ${p.profileName} CPU prewarm`),
  ];
  return {
    file,
    text: `${comments.map((c) => `// ${c}`).join("\n")}\npipeline {\n${indent(body).join("\n")}\n}\n`,
  };
}

/** A stage's shell text: kcache installed, the setup (or the CPU prewarm's install), read-only where no key, then `line`. */
function script(p: PipelineParts, line: string, setup = p.gh.setup): string[] {
  // Jenkins runs sh -x: a key exported from the agent's environment would be printed, unmasked.
  const lines = ["set +x", ...installLines(p.repository), ...setup, ...(p.s3 ? readOnlyLines() : []), line];
  return [`sh '''`, ...lines.map((l) => `  ${groovy(l)}`), `'''`];
}

function stage(name: string, when: string[], body: string[], head: string[] = []): string[] {
  return [
    `stage(${quoted(name)}) {`,
    ...indent([...head, "when {", ...indent(when), "}", "steps {", ...indent(body), "}"]),
    "}",
  ];
}

/** The job's stages and the prewarm's, each where its `when` lets it run, the key bound on the default branch. */
function jobStages(p: PipelineParts): string[] {
  const withKey = (body: string[]) =>
    p.s3
      ? [
          `withCredentials([usernamePassword(credentialsId: '${JENKINS_CREDENTIAL}', usernameVariable: 'AWS_ACCESS_KEY_ID', passwordVariable: 'AWS_SECRET_ACCESS_KEY')]) {`,
          ...indent(body),
          "}",
        ]
      : body;
  const allOf = (...conditions: string[]) => ["allOf {", ...indent(conditions), "}"];
  const run = p.s3
    ? [
        ...stage(
          `${p.profileName} (default branch)`,
          allOf(PRIMARY, `not { ${TIMER} }`),
          withKey(script(p, p.runLine)),
        ),
        ...stage(p.profileName, [`not { ${PRIMARY} }`], script(p, p.runLine)),
      ]
    : stage(p.profileName, [`not { ${TIMER} }`], script(p, p.runLine));
  return [
    ...run,
    ...stage(`${p.profileName} prewarm`, allOf(PRIMARY, TIMER), withKey(script(p, p.prewarmLine))),
  ];
}

/** The CPU prewarm's stage: change requests only, on its own agent (none allocated for other builds), failure caught. */
function cpuPrewarmStage(p: PipelineParts, cpu: NonNullable<PipelineParts["cpuPrewarm"]>): string[] {
  const label = p.profile.jenkins?.["cpu-prewarm"]?.label;
  return stage(
    `${p.profileName} CPU prewarm`,
    ["beforeAgent true", "changeRequest()"],
    [
      "catchError(buildResult: 'SUCCESS', stageResult: 'FAILURE') {",
      ...indent(script(p, cpu.line, cpu.install)),
      "}",
    ],
    [
      label ? `agent { label ${quoted(label)} }` : "agent any",
      `options { timeout(time: ${p.timeoutMinutes}, unit: 'MINUTES') }`,
    ],
  );
}

function indent(lines: string[]): string[] {
  return lines.map((l) => (l ? `  ${l}` : l));
}
