import { manifestBytes, readCatalog, storedPackSizes } from "../../cache/catalog.js";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { formatAge, formatBytes, textTable } from "../../format.js";
import { openStore } from "../../store/open.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

export async function lsCommand(o: GlobalOptions & { prefix?: string }) {
  const { config } = await commandBasics(o);
  const store = openStore(config, hostEnvironment());
  if (!store.capabilities.listAll) {
    throw new UsageError(
      `kcache ls needs a store that can list its keys; ${store.description} answers a lookup with the newest match only${store.capabilityHint ? `; ${store.capabilityHint}` : " (use kcache inspect <key>, or the store's own listing)"}`,
    );
  }
  const now = Date.now();
  const items = (await readCatalog(store)).filter((i) => !o.prefix || i.key.startsWith(o.prefix));
  const stored = await storedPackSizes(store);
  const rows = items.map((i) => ({
    prefix: i.manifest?.prefix ?? null,
    scope: i.scope,
    key: i.key,
    createdAt: i.manifest?.createdAt ?? null,
    ageSeconds: Math.round((now - i.modified.getTime()) / 1000),
    entries: i.manifest?.entries.length ?? null,
    packs: i.manifest?.packs.length ?? null,
    bytes: i.manifest ? manifestBytes(i.manifest, stored) : null,
    damaged: i.damaged,
  }));
  if (o.json) {
    printJson({ store: store.description, keys: rows });
    return;
  }
  if (rows.length === 0) {
    process.stderr.write(`no keys in ${store.description}\n`);
    return;
  }
  const byPrefix = new Map<string, typeof rows>();
  for (const r of rows)
    byPrefix.set(r.prefix ?? "(damaged)", [...(byPrefix.get(r.prefix ?? "(damaged)") ?? []), r]);
  const out: string[] = [];
  for (const [prefix, list] of byPrefix) {
    out.push(`${prefix}:`);
    out.push(
      textTable(
        ["  KEY", "SCOPE", "ENTRIES", "SIZE", "PACKS", "AGE"],
        list.map((r) => [
          `  ${r.key}`,
          r.scope,
          r.entries === null ? "-" : String(r.entries),
          r.bytes === null ? "damaged" : formatBytes(r.bytes),
          r.packs === null ? "-" : String(r.packs),
          formatAge(r.ageSeconds * 1000),
        ]),
      ),
    );
  }
  process.stdout.write(`${out.join("\n")}\n`);
}
