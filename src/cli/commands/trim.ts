import { folderKind } from "../../cache/cache-folder.js";
import { trimLine } from "../../cache/persistent/settle.js";
import { type TrimReport, trimFolder } from "../../cache/persistent/trim.js";
import { UsageError } from "../../errors.js";
import type { GlobalOptions } from "../options.js";
import { commandCaches, durationOption, printJson, sizeOption } from "../setup.js";

/**
 * `kcache trim`: each cache folder down to its max-size (or --max-size), and entries unused for
 * --older-than, least recently used first; never an entry a running job may read (cache/persistent/trim.ts).
 */
export async function trimCommand(o: GlobalOptions & { olderThan?: string; dryRun?: boolean }) {
  const { caches, log } = await commandCaches({ ...o, maxSize: undefined });
  const maxSize = o.maxSize === undefined ? undefined : sizeOption(o.maxSize, "--max-size");
  const olderThanMs = o.olderThan === undefined ? null : durationOption(o.olderThan, "--older-than");
  const bounded = caches.filter((c) => (maxSize ?? c.maxSize ?? null) !== null || olderThanMs !== null);
  if (bounded.length === 0)
    throw new UsageError(
      "nothing to trim by: give --max-size or --older-than, or set max-size on the caches in kcache.yml",
    );
  const reports: TrimReport[] = [];
  for (const c of bounded) {
    const kind = folderKind(c);
    if (!kind) {
      log.info(`${c.name}: ${c.path} holds nothing kcache recognises; nothing to trim`);
      continue;
    }
    const r = await trimFolder(c, kind, {
      maxSize: maxSize ?? c.maxSize ?? null,
      olderThanMs,
      dryRun: o.dryRun === true,
    });
    reports.push(r);
    log.info(trimLine(r));
  }
  if (o.json) printJson(reports);
}
