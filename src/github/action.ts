import path from "node:path";
import * as core from "@actions/core";
import { type JobContext, jobContext } from "../cache/job-context.js";
import { restore } from "../cache/restore.js";
import { save } from "../cache/save.js";
import { tolerateCacheFailure } from "../cache/tolerate.js";
import { type Config, loadConfig } from "../config/load.js";
import { KcacheError } from "../errors.js";
import { tritonKind } from "../kinds/triton.js";
import type { Log } from "../log.js";
import { prewarm } from "../pipeline/prewarm.js";
import { defaultOutDir, profileConfig, type RunReport, runProfile } from "../pipeline/run-profile.js";
import { stderrProgress } from "../progress.js";
import { runMarkdown } from "../report/run-markdown.js";
import { checkAnnotations, Outputs, runOutputs } from "./outputs.js";

/** The action's inputs; names and meanings follow actions/cache where they overlap. */
export const Inputs = {
  mode: "mode",
  profile: "profile",
  config: "config",
  store: "store",
  key: "key",
  restoreKeys: "restore-keys",
  path: "path",
  lookupOnly: "lookup-only",
  failOnCacheMiss: "fail-on-cache-miss",
  strict: "strict",
  ifChanged: "if-changed",
} as const;

type Mode = "run" | "restore" | "save" | "prewarm";

/** Messages through @actions/core, so they are annotations and folded groups in the job log. */
function actionLog(): Log {
  const warnings: string[] = [];
  return {
    warnings,
    info: (m) => core.info(`kcache: ${m}`),
    warn: (m) => {
      warnings.push(m);
      core.warning(m, { title: "kcache" });
    },
    debug: (m) => core.debug(m),
  };
}

/** The configuration, adjusted by the action's inputs (path, key, restore-keys, store). */
function actionConfig(mode: Mode): { config: Config; profile: string | undefined } {
  const store = core.getInput(Inputs.store);
  if (store) process.env.KCACHE_STORE = store;
  let config = loadConfig({ file: core.getInput(Inputs.config) || undefined });
  const profile = core.getInput(Inputs.profile) || undefined;
  if ((mode === "run" || mode === "prewarm") && !profile)
    throw new KcacheError(`mode ${mode} needs the profile input`, "EKCACHE_USAGE", 2);
  if (profile) config = profileConfig(config, profile).config;
  const paths = core.getMultilineInput(Inputs.path);
  if (paths.length) {
    config = {
      ...config,
      caches: paths.map((p, i) => ({
        name: i === 0 ? tritonKind.kind : `${tritonKind.kind}-${i + 1}`,
        kind: tritonKind.kind,
        path: path.resolve(p.replace(/^~(?=\/|$)/, process.env.HOME ?? "~")),
        env: i === 0 ? "TRITON_CACHE_DIR" : undefined,
      })),
    };
  }
  const restoreKeys = core.getMultilineInput(Inputs.restoreKeys);
  if (restoreKeys.length) config = { ...config, key: { ...config.key, restorePrefixes: restoreKeys } };
  return { config, profile };
}

async function context(config: Config, log: Log): Promise<JobContext> {
  const ctx = await jobContext({
    config,
    log,
    strict: core.getBooleanInput(Inputs.strict),
    progress: stderrProgress,
  });
  const key = core.getInput(Inputs.key);
  // An explicit key replaces kcache's own, as in actions/cache: exact key, then restore-keys.
  return key ? { ...ctx, key, stackKeyPrefix: key } : ctx;
}

function publishRun(report: RunReport): void {
  for (const [k, v] of Object.entries(runOutputs(report))) core.setOutput(k, v);
  for (const a of checkAnnotations(report, process.cwd())) process.stdout.write(`${a}\n`);
  if (process.env.GITHUB_STEP_SUMMARY) void core.summary.addRaw(runMarkdown(report)).write();
  if (report.exitCode !== 0)
    core.setFailed(
      `kcache run ${report.profile}: failed at ${report.firstFailure} (exit ${report.exitCode})`,
    );
}

/** The action: `run` a profile, `restore`, `save`, or `prewarm`. Store failures warn; the job goes on. */
export async function runAction(): Promise<void> {
  const mode = (core.getInput(Inputs.mode) || "run") as Mode;
  if (!["run", "restore", "save", "prewarm"].includes(mode)) {
    core.setFailed(`mode "${mode}": use run, restore, save or prewarm`);
    return;
  }
  const log = actionLog();
  try {
    const { config, profile } = actionConfig(mode);
    const strict = core.getBooleanInput(Inputs.strict);
    const outDir = defaultOutDir(profile ?? "cache");
    switch (mode) {
      case "restore": {
        const ctx = await context(config, log);
        core.setOutput(Outputs.primaryKey, ctx.key);
        const r = await tolerateCacheFailure("restore", strict, log, () =>
          restore(ctx, { lookupOnly: core.getBooleanInput(Inputs.lookupOnly) }),
        );
        // Later steps find each cache where it was restored.
        for (const c of config.caches) if (c.env) core.exportVariable(c.env, c.path);
        core.setOutput(Outputs.cacheHit, String(Boolean(r?.cacheHit)));
        core.setOutput(Outputs.matchedKey, r?.matchedKey ?? "");
        if (r?.matchedKey)
          log.info(
            `restored ${r.entriesRestored} entries from ${r.matchedKey}${r.cacheHit ? " (exact)" : ""}`,
          );
        else log.info("cache miss");
        if (!r?.matchedKey && core.getBooleanInput(Inputs.failOnCacheMiss)) {
          core.setFailed(`no cache matched ${ctx.key} (fail-on-cache-miss)`);
        }
        return;
      }
      case "save": {
        const ctx = await context(config, log);
        core.setOutput(Outputs.primaryKey, ctx.key);
        const r = await tolerateCacheFailure("save", strict, log, () => save(ctx));
        if (r) log.info(r.message);
        core.setOutput(Outputs.saved, String(r?.outcome === "saved"));
        return;
      }
      case "run": {
        const report = await runProfile({
          config: loadConfig({ file: core.getInput(Inputs.config) || undefined }),
          profileName: profile as string,
          log,
          outDir,
          strict,
          progress: stderrProgress,
        });
        publishRun(report);
        return;
      }
      case "prewarm": {
        const r = await prewarm({
          config: loadConfig({ file: core.getInput(Inputs.config) || undefined }),
          profileName: profile as string,
          log,
          outDir,
          strict,
          ifChanged: core.getMultilineInput(Inputs.ifChanged),
        });
        core.setOutput(Outputs.primaryKey, r.key);
        core.setOutput(Outputs.matchedKey, r.matchedKey ?? "");
        core.setOutput("prewarm", r.outcome);
        if (r.run) publishRun(r.run);
        return;
      }
    }
  } catch (e) {
    if (e instanceof KcacheError) core.setFailed(e.message);
    else core.setFailed(`kcache: internal error (please report): ${(e as Error).stack ?? e}`);
  }
}
