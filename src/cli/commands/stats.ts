import fs from "node:fs";
import { packBytes, readCatalog, storedPackSizes } from "../../cache/catalog.js";
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
import {
  estimateLines,
  WEEK_COLUMNS,
  WORKING_SET_COLUMNS,
  weekCells,
  workingSetCaption,
  workingSetCells,
} from "../../report/stats-tables.js";
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
  const stored = await storedPackSizes(store);
  const sets = workingSets(catalog, defaultScope, o.prefix);
  for (const item of catalog) {
    const m = item.manifest;
    if (!m || (o.prefix && !m.prefix.startsWith(o.prefix))) continue;
    for (const pack of m.packs) {
      if (counted.has(pack.object)) continue;
      counted.add(pack.object);
      // As the store lists the pack: a manifest claims what its writer likes.
      storeBytes[workloadOf(m.prefix)] = (storeBytes[workloadOf(m.prefix)] ?? 0) + packBytes(pack, stored);
    }
  }
  const scope = o.allScopes ? "every scope" : defaultScope;
  if (o.html) {
    fs.writeFileSync(
      o.html,
      statsHtml({
        store: store.description,
        scope,
        runs: chosen.length,
        weeks,
        storeBytes,
        workingSets: sets,
        workingScope: defaultScope,
      }),
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

/** The weekly table as text, and each prefix's cost the saved seconds are estimated with. */
function weekLines(
  weeks: WeekStats[],
  o: { runs: number; scope: string; store: string; storeBytes: Record<string, number> },
): string[] {
  const lines = [
    `${o.runs} runs of ${o.scope} in ${o.store}; the store holds ${
      Object.entries(o.storeBytes)
        .map(([p, b]) => `${formatBytes(b)} for ${p}`)
        .join(", ") || "no keys"
    }`,
    "",
    `| ${WEEK_COLUMNS.join(" | ")} |`,
    "|---|---|---:|---:|---|---:|---:|---:|---|---:|---|---|---|",
    ...weeks.map((w) => `| ${weekCells(w).join(" | ")} |`),
  ];
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
  const estimates = estimateLines(weeks);
  return estimates.length ? [...lines, "", ...estimates] : lines;
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
  return [
    workingSetCaption(scope),
    "",
    `| ${WORKING_SET_COLUMNS.join(" | ")} |`,
    "|---|---|---:|---:|---:|---|",
    ...sets.map((s) => `| ${workingSetCells(s).join(" | ")} |`),
  ];
}
