import { execFileSync } from "node:child_process";
import picomatch from "picomatch";
import { goneSummary, keyWholeness } from "../cache/key-wholeness.js";
import { findManifest } from "../cache/lookup.js";
import { defaultBranchScope, describeIdentity } from "../keys/scope.js";
import { manifestObject } from "../store/layout.js";
import { type RunOptions, type RunReport, runProfile } from "./run-profile.js";

export interface PrewarmReport {
  /**
   * present: the exact key exists; current: no watched file changed since the newest cache; ran: the
   * profile ran; refused: this run does not write the default branch's scope (a pull request, say).
   */
  outcome: "present" | "current" | "ran" | "refused";
  key: string;
  /** The cache that made a run unnecessary, or that the run restored from. */
  matchedKey: string | null;
  message: string;
  run: RunReport | null;
}

/**
 * `kcache prewarm`: fills the default branch's cache for its current head, only when it is missing.
 * Looks the key up without downloading; with `ifChanged` globs, the newest cache of the same stack
 * also counts as current when no file matching them changed between its revision and HEAD.
 */
export async function prewarm(opts: RunOptions & { ifChanged?: string[] }): Promise<PrewarmReport> {
  const { ctx, cwd } = opts.job;
  const done = (
    outcome: PrewarmReport["outcome"],
    matchedKey: string | null,
    message: string,
    run: RunReport | null = null,
  ) => {
    ctx.log.info(message);
    return { outcome, key: ctx.key, matchedKey, message, run };
  };

  const defaultScope = defaultBranchScope(ctx.scopes.defaultBranch);
  if (ctx.scopes.write !== defaultScope) {
    ctx.log.warn(
      `prewarm fills only the default branch's cache (a push, schedule or manual run on ${ctx.scopes.defaultBranch}); this run (${describeIdentity(ctx.scopes.identity)}${ctx.scopes.identity.event ? `, event ${ctx.scopes.identity.event}` : ""}) writes scope ${ctx.scopes.write}: nothing run, nothing saved`,
    );
    return {
      outcome: "refused",
      key: ctx.key,
      matchedKey: null,
      message: `refused: scope ${ctx.scopes.write}`,
      run: null,
    };
  }
  const existing = await keyWholeness(ctx.store, manifestObject(ctx.scopes.write, ctx.key));
  if (existing.state === "whole")
    return done("present", ctx.key, `cache ${ctx.key} is present in ${ctx.scopes.write}; nothing to prewarm`);
  // Its manifest outlived a pack the store evicted: filled again (its save replaces the manifest).
  if (existing.state === "broken")
    ctx.log.info(`cache ${ctx.key} is broken: ${goneSummary(existing)}; prewarming it`);
  if (opts.ifChanged?.length) {
    const newest = await findManifest(ctx);
    if (newest) {
      const changed = changedFiles(newest.manifest.revision, ctx.revision, cwd);
      if (changed === null) {
        ctx.log.info(
          `cannot diff ${newest.manifest.revision.slice(0, 12)}..${ctx.revision.slice(0, 12)} (shallow clone?); prewarming`,
        );
      } else {
        const watched = picomatch(opts.ifChanged, { dot: true });
        const hits = changed.filter((f) => watched(f));
        if (hits.length === 0) {
          return done(
            "current",
            newest.key,
            `no file matching ${opts.ifChanged.join(", ")} changed since ${newest.key} (${changed.length} other files did); it is current`,
          );
        }
        ctx.log.info(
          `${hits.length} watched files changed since ${newest.key}, e.g. ${hits.slice(0, 3).join(", ")}; prewarming`,
        );
      }
    }
  }
  // A prewarm that compiled nothing proves nothing about which kernels are used: it never evicts.
  const run = await runProfile({ ...opts, evict: "if-new" });
  return done(
    "ran",
    run.restore?.matchedKey ?? null,
    run.passed
      ? `prewarmed ${ctx.key} (${run.save?.outcome ?? run.saveSkipped})`
      : `prewarm run failed at ${run.firstFailure}; nothing saved`,
    run,
  );
}

/** Files changed between two revisions, or null when git cannot tell (an unknown or shallow revision). */
function changedFiles(from: string, to: string, cwd: string): string[] | null {
  try {
    const out = execFileSync("git", ["diff", "--name-only", `${from}..${to}`], {
      cwd,
      stdio: ["ignore", "pipe", "ignore"],
    });
    return out.toString().split("\n").filter(Boolean);
  } catch {
    return null;
  }
}
