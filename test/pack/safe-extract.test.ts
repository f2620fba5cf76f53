import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { encodeManifest, MANIFEST_FORMAT, type Manifest } from "../../src/manifest/manifest.js";
import { EntryDigest } from "../../src/pack/entry-digest.js";
import { zstdEngine } from "../../src/pack/zstd/engines.js";
import { manifestObject, packObject } from "../../src/store/layout.js";
import { tritonKeyName } from "../fixtures/triton-cache.js";
import { type Member, tarOf } from "../helpers/hostile-pack.js";
import { sandbox } from "../helpers/sandbox.js";

describe("unpacking a hostile pack", () => {
  it("writes nothing outside the cache: no '..', absolute paths, symlinks, hard links or devices", async () => {
    const sb = sandbox();
    const dest = path.join(sb.dir, "deep", "triton");
    const outsideAbs = path.join(sb.dir, "absolute-target.txt");
    const good = tritonKeyName("good");
    const linky = tritonKeyName("linky");
    const goodFiles = [
      ["k.cubin", "cubin bytes"],
      ["k.json", "{}"],
    ] as const;
    const members: Member[] = [
      { type: "File", path: "triton/../../escape-dotdot.txt", data: "pwned" },
      { type: "File", path: `triton/${good}/../../../escape-inner.txt`, data: "pwned" },
      { type: "File", path: outsideAbs, data: "pwned" },
      { type: "File", path: "other-cache/x/y", data: "pwned" },
      { type: "Directory", path: `triton/${good}/` },
      ...goodFiles.map(([f, d]) => ({ type: "File" as const, path: `triton/${good}/${f}`, data: d })),
      { type: "File", path: `triton/${linky}/k.so`, data: "launcher" },
      { type: "SymbolicLink", path: `triton/${linky}/passwd`, linkpath: "/etc/passwd" },
      { type: "Link", path: `triton/${linky}/hard`, linkpath: "/etc/passwd" },
      { type: "CharacterDevice", path: `triton/${linky}/null` },
      { type: "FIFO", path: `triton/${linky}/fifo` },
      { type: "File", path: `triton/${linky}/sub/deeper.so`, data: "too deep" },
    ];
    const tar = tarOf(members);
    const z = (await zstdEngine("")).compressStream(3);
    const [packed] = await Promise.all([buffer(z), Promise.resolve(z.end(tar))]);
    const object = packObject("branch/main", "hostile");
    const file = path.join(sb.store, ...object.split("/"));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, packed);

    const d = new EntryDigest();
    for (const [f, data] of goodFiles) {
      d.beginFile(f, data.length);
      d.update(Buffer.from(data));
    }
    // The manifest's digest for this entry is right for its one regular file: only the links and
    // devices beside it can make kcache refuse it.
    const l = new EntryDigest();
    l.beginFile("k.so", 8);
    l.update(Buffer.from("launcher"));
    const ctx = await sb.context({
      config: sb.config({
        caches: [{ name: "triton", kind: "triton", path: dest }],
        store: { path: sb.store },
        key: { prefix: "bench" },
      }),
    });
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      key: ctx.key,
      prefix: "bench",
      stackId: ctx.stack.stackId,
      stack: ctx.stack.components,
      revision: ctx.revision,
      scope: "branch/main",
      createdAt: new Date().toISOString(),
      producer: "test",
      parent: null,
      caches: [{ name: "triton", kind: "triton" }],
      packs: [
        {
          object,
          sha256: createHash("sha256").update(packed).digest("hex"),
          size: packed.length,
          savedBy: ctx.key,
          entryBytes: 0,
          entries: 2,
        },
      ],
      entries: [
        { cache: "triton", name: good, sha256: d.digest(), size: d.size, files: d.files, pack: 0 },
        { cache: "triton", name: linky, sha256: l.digest(), size: 8, files: 1, pack: 0 },
      ],
    };
    const mfile = path.join(sb.store, ...manifestObject("branch/main", ctx.key).split("/"));
    fs.mkdirSync(path.dirname(mfile), { recursive: true });
    fs.writeFileSync(mfile, encodeManifest(manifest));

    const r = await restore(ctx);
    expect(r.entriesRestored).toBe(1);
    expect(r.membersRefused).toBeGreaterThanOrEqual(9);
    expect(fs.readdirSync(path.join(dest, good)).sort()).toEqual(["k.cubin", "k.json"]);
    expect(fs.existsSync(path.join(dest, linky))).toBe(false);

    // Nothing anywhere in the sandbox but the store, the state and the restored entry.
    const everything = fs
      .readdirSync(sb.dir, { recursive: true, withFileTypes: true })
      .filter((e) => !e.isDirectory())
      .map((e) => path.relative(sb.dir, path.join(e.parentPath, e.name)))
      .filter((p) => !p.startsWith("store/") && !p.startsWith("state/"))
      // The marker that says a job uses the folder (until its save), not pack content.
      .filter((p) => !path.basename(p).startsWith(".kcache-live-"));
    expect(everything.sort()).toEqual([`deep/triton/${good}/k.cubin`, `deep/triton/${good}/k.json`]);
    // Where "triton/../../escape-dotdot.txt" would land if '..' were followed from the cache root.
    expect(fs.existsSync(path.join(dest, "..", "..", "escape-dotdot.txt"))).toBe(false);
    expect(fs.existsSync(path.join(dest, "..", "..", "..", "escape-inner.txt"))).toBe(false);
  });
});
