import { readCatalog, readCatalogItems } from "../../cache/catalog.js";
import { lastUseOf, workingSetOf } from "../../cache/usage/working-set.js";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { formatBytes, textTable } from "../../format.js";
import { jobScopes } from "../../job/build-context.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";
import { manifestObject } from "../../store/layout.js";
import { openStore } from "../../store/open.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

export async function inspectCommand(key: string, o: GlobalOptions & { scope?: string; entries?: boolean }) {
  const { config, log } = await commandBasics(o);
  const store = openStore(config, hostEnvironment());
  // A store that cannot list everything (GitHub's cache without a REST token) is asked for the key
  // itself, in each scope a restore here would read, as `restore --lookup-only` does.
  const items = store.capabilities.listAll
    ? await readCatalog(store)
    : await readCatalogItems(
        store,
        (o.scope ? [o.scope] : (await jobScopes(config, hostEnvironment(), process.cwd(), log)).read).map(
          (s) => manifestObject(s, key),
        ),
      );
  const found = items.filter((i) => i.key === key && (!o.scope || i.scope === o.scope));
  if (found.length === 0)
    throw new UsageError(
      `no key ${key}${o.scope ? ` in scope ${o.scope}` : ""} in ${store.description}; see kcache ls`,
    );
  if (o.json) {
    printJson(
      found.map((i) => ({ scope: i.scope, object: i.object, damaged: i.damaged, manifest: i.manifest })),
    );
    return;
  }
  for (const i of found) {
    const m = i.manifest;
    if (!m) {
      process.stdout.write(`${key} (${i.scope}): damaged: ${i.damaged}\n`);
      continue;
    }
    const lines = [
      `key       ${m.key}`,
      `scope     ${m.scope}`,
      `revision  ${m.revision}`,
      `created   ${m.createdAt} by ${m.producer}`,
      `parent    ${m.parent ?? "(none: a full save)"}`,
      `stack     ${m.stackId}`,
      ...Object.entries(m.stack).map(([k, v]) => `  ${k}=${v}`),
      `caches    ${m.caches.map((c) => `${c.name} (${c.kind}): ${m.entries.filter((e) => e.cache === c.name).length} entries`).join(", ")}`,
      `packs     ${m.packs.length}, ${formatBytes(m.packs.reduce((s, p) => s + p.size, 0))} compressed`,
      workingSetLine(m),
      textTable(
        ["  PACK", "SIZE", "ENTRIES", "LIVE"],
        m.packs.map((p, idx) => [
          `  ${p.object}`,
          formatBytes(p.size),
          String(p.entries),
          String(m.entries.filter((e) => e.pack === idx).length),
        ]),
      ),
    ];
    if (o.entries) {
      lines.push(
        textTable(
          ["  ENTRY", "SIZE", "FILES", "SHA256", "LAST USED"],
          m.entries.map((e) => [
            `  ${e.cache}/${e.name}`,
            formatBytes(e.size),
            String(e.files),
            e.sha256.slice(0, 16),
            lastUsedCell(m, e),
          ]),
        ),
      );
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  }
}

/** The key's working set: what the job used at its save and what it carried unused. */
function workingSetLine(m: Manifest): string {
  if (m.generation === undefined) return "use       not recorded (saved before kcache recorded use)";
  const w = workingSetOf(m);
  return `use       save ${m.generation} of its chain: ${w.live.entries} entries (${formatBytes(w.live.bytes)}) used at it, ${w.unused.entries} (${formatBytes(w.unused.bytes)}) carried unused`;
}

/** When a job last used an entry: "this save", or how many saves ago, at which revision and time. */
function lastUsedCell(m: Manifest, e: EntryRef): string {
  if (m.generation === undefined) return "-";
  const u = lastUseOf(m, e);
  const ago = (m.generation ?? 0) - u.generation;
  return `${ago === 0 ? "this save" : `${ago} save${ago === 1 ? "" : "s"} ago`} (${u.revision.slice(0, 12)}, ${u.at.slice(0, 16).replace("T", " ")})`;
}
