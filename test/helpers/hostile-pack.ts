import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Header, Pax } from "tar";
import {
  type EntryRef,
  encodeManifest,
  MANIFEST_FORMAT,
  type Manifest,
} from "../../src/manifest/manifest.js";
import { EntryDigest } from "../../src/pack/entry-digest.js";
import { END_OF_ARCHIVE, fileHeader, padding } from "../../src/pack/write/tar-header.js";
import { zstdEngine } from "../../src/pack/zstd/engines.js";
import { TEST_STACK } from "./test-stack.js";

/** A tar member as an attacker writes it: anything kcache itself would never pack. */
export type Member =
  | { type: "File"; path: string; data: string | Buffer }
  /** A regular file of `size` zero bytes, streamed (gigabytes compress to kilobytes). */
  | { type: "Zeros"; path: string; size: number }
  | { type: "SymbolicLink" | "Link"; path: string; linkpath: string }
  /** A PAX extended header that renames the regular file after it to `paxPath`. */
  | { type: "PaxOverride"; paxPath: string; path: string; data: string }
  | { type: "CharacterDevice" | "FIFO" | "Directory"; path: string };

const ZEROS = Buffer.alloc(1 << 20);

/** The tar stream of `members`, generated as it is read. */
export function* tarStream(members: Member[]): Generator<Buffer> {
  for (const m of members) {
    if (m.type === "File") {
      const data = Buffer.from(m.data);
      yield fileHeader(m.path, data.length);
      yield data;
      yield padding(data.length);
      continue;
    }
    if (m.type === "PaxOverride") {
      const data = Buffer.from(m.data);
      yield new Pax({ path: m.paxPath, mtime: new Date(0) }).encode();
      yield fileHeader(m.path, data.length);
      yield data;
      yield padding(data.length);
      continue;
    }
    if (m.type === "Zeros") {
      yield fileHeader(m.path, m.size);
      for (let left = m.size; left > 0; left -= ZEROS.length)
        yield ZEROS.subarray(0, Math.min(left, ZEROS.length));
      yield padding(m.size);
      continue;
    }
    const h = new Header({
      path: m.path,
      type: m.type,
      mode: 0o644,
      size: 0,
      mtime: new Date(0),
      ...("linkpath" in m ? { linkpath: m.linkpath } : {}),
      ...(m.type === "CharacterDevice" ? { devmaj: 1, devmin: 3 } : {}),
    });
    h.encode();
    yield h.block as Buffer;
  }
  yield END_OF_ARCHIVE;
}

/** The whole tar of `members` in memory (small packs only). */
export function tarOf(members: Member[]): Buffer {
  return Buffer.concat([...tarStream(members)]);
}

/** The digest an honest manifest records for an entry of these files (stored bytes, pack order). */
export function entryDigest(files: [string, string | Buffer][]): {
  sha256: string;
  size: number;
  files: number;
} {
  const d = new EntryDigest();
  for (const [rel, data] of files) {
    const b = Buffer.from(data);
    d.beginFile(rel, b.length);
    d.update(b);
  }
  return { sha256: d.digest(), size: d.size, files: d.files };
}

/**
 * Writes a pack of `members` and a valid manifest listing `entries` into a local store at `store`,
 * under `key` in `scope`: what a store written by someone else (or damaged) could hold. The manifest
 * is honest about the pack's digest and size, so only the members themselves are hostile.
 */
export async function plantPack(opts: {
  store: string;
  scope?: string;
  key: string;
  prefix: string;
  cacheName?: string;
  kind?: "triton" | "dir";
  members: Member[];
  entries: Omit<EntryRef, "pack" | "cache">[];
  /** What the manifest says the pack's entries hold uncompressed (default: the listed entries' bytes). */
  entryBytes?: number;
  /** Bytes appended after the compressed tar, e.g. an empty zstd frame. */
  trailer?: Buffer;
  /** Compresses the tar by hand (crafted frames) instead of with this machine's engine. */
  compress?: (tar: Buffer) => Promise<Buffer>;
}): Promise<{ packFile: string; packBytes: number }> {
  const scope = opts.scope ?? "branch/main";
  const enc = encodeURIComponent;
  const object = `packs/${enc(scope)}/hostile-${Date.now()}.tar.zst`;
  const packFile = path.join(opts.store, ...object.split("/"));
  fs.mkdirSync(path.dirname(packFile), { recursive: true });
  if (opts.compress) fs.writeFileSync(packFile, await opts.compress(tarOf(opts.members)));
  else
    await pipeline(
      Readable.from(tarStream(opts.members)),
      (await zstdEngine("")).compressStream(1),
      fs.createWriteStream(packFile),
    );
  if (opts.trailer) fs.appendFileSync(packFile, opts.trailer);
  const packed = fs.readFileSync(packFile);
  const cache = opts.cacheName ?? "triton";
  const manifest: Manifest = {
    format: MANIFEST_FORMAT,
    key: opts.key,
    prefix: opts.prefix,
    stackId: TEST_STACK.stackId,
    stack: TEST_STACK.components,
    revision: opts.key.split("-").at(-1) ?? "",
    scope,
    createdAt: new Date().toISOString(),
    producer: "hostile test",
    parent: null,
    caches: [{ name: cache, kind: opts.kind ?? "triton" }],
    packs: [
      {
        object,
        sha256: createHash("sha256").update(packed).digest("hex"),
        size: packed.length,
        savedBy: opts.key,
        entryBytes: opts.entryBytes ?? opts.entries.reduce((s, e) => s + e.size, 0),
        entries: opts.entries.length,
      },
    ],
    entries: opts.entries.map((e) => ({ ...e, cache, pack: 0 })),
  };
  const mfile = path.join(opts.store, "manifests", enc(scope), enc(opts.key));
  fs.mkdirSync(path.dirname(mfile), { recursive: true });
  fs.writeFileSync(mfile, encodeManifest(manifest));
  return { packFile, packBytes: packed.length };
}

/** Bytes of every file under `dir`, now. */
export function diskBytes(dir: string): number {
  let total = 0;
  const walk = (d: string) => {
    let items: fs.Dirent[];
    try {
      items = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const i of items) {
      const p = path.join(d, i.name);
      if (i.isDirectory()) walk(p);
      else {
        try {
          total += fs.lstatSync(p).size;
        } catch {
          // removed meanwhile
        }
      }
    }
  };
  walk(dir);
  return total;
}
