import fs from "node:fs";
import { readCatalog } from "../../cache/catalog.js";
import type { WorkingSet } from "../../cache/usage/working-set.js";
import { parseDuration } from "../../config/durations.js";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { formatBytes } from "../../format.js";
import {
  LAZY_COLUMNS,
  lazyCells,
  readRunRecords,
  type WeekStats,
  weeklyStats,
  workloadOf,
} from "../../history/stats.js";
import { type PrefixWorkingSet, workingSets } from "../../history/working-sets.js";
import { jobScopes } from "../../job/build-context.js";
import { defaultBranchScope } from "../../keys/scope.js";
import { silentLog } from "../../log.js";
import { statsHtml } from "../../report/stats-html.js";
import { openStore } from "../../store/open.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

/**
 * `kcache stats`: what the cache did for the default branch's runs, per workload prefix and week,
 * from the run records `kcache run` leaves in the store. Pull requests' runs never count unless asked.
 */
export async function statsCommand(
  o: GlobalOptions & { prefix?: string; since?: string; allScopes?: boolean; html?: string },
) {
  const { config } = await commandBasics(o);
  const store = openStore(config, hostEnvironment());
  if (!store.capabilities.listAll)
    throw new UsageError(
      `kcache stats needs a store that can list its objects; ${store.description} cannot${store.capabilityHint ? ` (${store.capabilityHint})` : ""}`,
    );
  const sinceMs = o.since ? parseDuration(o.since) : null;
  if (o.since && sinceMs === null)
    throw new UsageError(`--since ${o.since}: use a number and a unit, like 30d or 12h`);
  const scopes = await jobScopes(config, hostEnvironment(), process.cwd(), silentLog());
  const defaultScope = defaultBranchScope(scopes.defaultBranch);
  const { records, unreadable } = await readRunRecords(store);
  const chosen = records.filter(
    (r) =>
      (o.allScopes || r.scope === defaultScope) &&
      (!o.prefix || r.prefix.startsWith(o.prefix)) &&
      (sinceMs === null || Date.now() - new Date(r.startedAt).getTime() <= sinceMs),
  );
  const weeks = weeklyStats(chosen);
  // What each workload's keys hold in the store now: the packs its manifests reference, each once.
  const storeBytes: Record<string, number> = {};
  const counted = new Set<string>();
  const catalog = await readCatalog(store);
  const sets = workingSets(catalog, defaultScope, o.prefix);
  for (const item of catalog) {
    const m = item.manifest;
    if (!m || (o.prefix && !m.prefix.startsWith(o.prefix))) continue;
    for (const pack of m.packs) {
      if (counted.has(pack.object)) continue;
      counted.add(pack.object);
      storeBytes[workloadOf(m.prefix)] = (storeBytes[workloadOf(m.prefix)] ?? 0) + pack.size;
    }
  }
  const scope = o.allScopes ? "every scope" : defaultScope;
  if (o.html) {
    fs.writeFileSync(
      o.html,
      statsHtml({ store: store.description, scope, runs: chosen.length, weeks, storeBytes }),
    );
    process.stderr.write(`kcache: wrote ${o.html}\n`);
  }
  if (o.json) {
    printJson({
      store: store.description,
      scope: o.allScopes ? "all" : defaultScope,
      runs: chosen.length,
      unreadable,
      weeks,
      workingSets: sets,
    });
    return;
  }
  if (sets.length) process.stdout.write(`${workingSetLines(sets, defaultScope).join("\n")}\n\n`);
  if (weeks.length === 0) {
    process.stderr.write(
      `no runs recorded in ${store.description}${o.allScopes ? "" : ` for ${defaultScope}${otherBranchesHint(records, defaultScope)}`}\n`,
    );
    return;
  }
  process.stdout.write(
    `${weekLines(weeks, { runs: chosen.length, scope, store: store.description, storeBytes }).join("\n")}\n`,
  );
}

/** The weekly table as text, and each prefix's kernel cost the saved seconds are estimated with. */
function weekLines(
  weeks: WeekStats[],
  o: { runs: number; scope: string; store: string; storeBytes: Record<string, number> },
): string[] {
  const s = (v: number | null | undefined, d = 1) => (v === null || v === undefined ? "-" : v.toFixed(d));
  const lines = [
    `${o.runs} runs of ${o.scope} in ${o.store}; the store holds ${
      Object.entries(o.storeBytes)
        .map(([p, b]) => `${formatBytes(b)} for ${p}`)
        .join(", ") || "no keys"
    }`,
    "",
    "| prefix | week | runs | passed | exact / prefix / miss | hit rate | kernels compiled | loaded | compile s cold / warm | saved s (est.) | restore s p50 / p90 | save s p50 / p90 |",
    "|---|---|---:|---:|---|---:|---:|---:|---|---:|---|---|",
    ...weeks.map(
      (w) =>
        `| ${w.prefix} | ${w.week} | ${w.runs} | ${w.passed} | ${w.hits.exact} / ${w.hits.prefix} / ${w.hits.miss} | ${w.hitRate === null ? "-" : `${Math.round(w.hitRate * 100)}%`} | ${w.kernelsCompiled} | ${w.kernelsLoaded ?? "?"} | ${s(w.compileSecondsCold)} / ${s(w.compileSecondsWarm)} | ${s(w.secondsSavedEstimate, 0)} | ${s(w.restoreSeconds?.p50, 2)} / ${s(w.restoreSeconds?.p90, 2)} | ${s(w.saveSeconds?.p50, 2)} / ${s(w.saveSeconds?.p90, 2)} |`,
    ),
  ];
  const learnt = {
    "compile-times": "from the hook's compile times",
    "job-times": "learnt from the jobs' seconds over their new kernels",
    "job-times-upper-bound": "at most: the jobs' seconds per new kernel, too few runs for more",
  };
  if (weeks.some((w) => w.lazy))
    lines.push(
      "",
      `| ${LAZY_COLUMNS.join(" | ")} |`,
      `|---|---|${"---:|".repeat(LAZY_COLUMNS.length - 2)}`,
      ...weeks.flatMap((w) => {
        const cells = lazyCells(w);
        return cells ? [`| ${cells.join(" | ")} |`] : [];
      }),
    );
  const costs = new Map(weeks.flatMap((w) => (w.entryCost ? [[w.prefix, w.entryCost] as const] : [])));
  if (costs.size) lines.push("");
  for (const [prefix, c] of costs)
    lines.push(
      `${prefix}: one kernel ≈ ${c.seconds.toFixed(2)} s (${learnt[c.from]}); saved s (est.) = kernels found in the cache x that`,
    );
  return lines;
}

/**
 * When the default branch's scope has no runs but other branches' have (a repository on `master`,
 * read outside GitHub where no event names the default branch): which, and how to choose.
 */
function otherBranchesHint(records: { scope: string }[], defaultScope: string): string {
  const counts = new Map<string, number>();
  for (const r of records)
    if (r.scope.startsWith("branch/") && r.scope !== defaultScope)
      counts.set(r.scope, (counts.get(r.scope) ?? 0) + 1);
  if (!counts.size) return "";
  const [top] = [...counts].sort((a, b) => b[1] - a[1]);
  const list = [...counts].map(([scope, n]) => `${scope} (${n})`).join(", ");
  return `; runs are recorded for ${list}. If ${top?.[0].slice("branch/".length)} is the default branch, set key.default-branch: ${top?.[0].slice("branch/".length)} in kcache.yml (or pass --all-scopes)`;
}

/** The working-set table: per prefix, what the newest key's job used, what its restores carry unused, and the trend. */
function workingSetLines(sets: PrefixWorkingSet[], scope: string): string[] {
  const share = (w: WorkingSet) =>
    w.live.bytes + w.unused.bytes > 0
      ? `${Math.round((w.unused.bytes / (w.live.bytes + w.unused.bytes)) * 100)}%`
      : "-";
  return [
    `working sets of ${scope}'s newest keys (a restore downloads both columns; eviction drops the unused ones):`,
    "",
    "| prefix | newest key | used at its save | carried unused | unused share | trend |",
    "|---|---|---:|---:|---:|---|",
    ...sets.map((s) => {
      const n = s.newest;
      const trend = s.earlier
        ? `${s.saves} saves before: ${formatBytes(s.earlier.live.bytes)} used, ${formatBytes(s.earlier.unused.bytes)} unused`
        : "-";
      return `| ${s.prefix} | ${n.key} | ${n.live.entries} entries, ${formatBytes(n.live.bytes)} | ${n.unused.entries} entries, ${formatBytes(n.unused.bytes)} | ${share(n)} | ${trend} |`;
    }),
  ];
}
