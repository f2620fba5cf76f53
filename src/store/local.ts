import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StoreError } from "../errors.js";
import { makeFolders } from "../make-folders.js";
import { processAlive } from "../process-alive.js";
import { ObjectFault, ObjectNotFound, type Store, type StoredObject } from "./store.js";

const TMP = ".tmp";
/** A temp file older than this is reaped even when its writer cannot be checked (another host). */
const STALE_TMP_MS = 24 * 60 * 60 * 1000;
let hostName: string | undefined;
/**
 * This host's name as a temp file gives it; asked when first needed, not as the module loads (the
 * single executable's start-up snapshot would keep the build machine's).
 */
const host = () => (hostName ??= os.hostname().replace(/[^A-Za-z0-9_.]/g, "_"));
/** `<host>-<pid>-<random>`: who wrote a temp file, so a later run can tell whether its writer died. */
const TMP_NAME = /^(.+)-(\d+)-[0-9a-f]{12}$/;
/**
 * How every object is opened for reading. kcache writes only regular files into its store (temp
 * files renamed in), never links: O_NOFOLLOW refuses a link (to /dev/zero, or out of the store),
 * and O_NONBLOCK makes opening a FIFO return at once rather than block a libuv thread for good
 * (Node joins those threads at exit: kcache would never end). What was opened is then checked by
 * fstat to be a regular file.
 */
const READ_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW;

/**
 * A store in a local directory (a runner's disk, or an NFS mount shared by runners). Objects are
 * written to a temp file and renamed in, so a killed save leaves nothing visible; create-if-absent
 * uses link(2), which fails if the name exists, so concurrent savers of one key cannot both win.
 */
export function localStore(root: string): Store {
  const at = new LocalFolder(root);
  return {
    description: `local store ${root}`,
    capabilities: { listAll: true, delete: true, atomicCreate: true },
    reapTemporary: () => at.wrap("reaping temporary files", async () => reapTemporary(tmpFolder(root))),
    put: (name, body) => at.wrap(`writing ${name}`, () => at.put(name, body)),
    createIfAbsent: (name, body) => at.wrap(`creating ${name}`, () => at.createIfAbsent(name, body)),
    localFile: (name) => at.regularFile(name),
    get: (name) => at.wrap(`reading ${name}`, () => at.get(name)),
    getRange: (name, offset, length) =>
      at.wrap(`reading ${name} at ${offset}`, () => at.getRange(name, offset, length)),
    read: (name, maxBytes) => at.wrap(`reading ${name}`, () => at.read(name, maxBytes)),
    exists: (name) => at.wrap(`checking ${name}`, async () => at.exists(name)),
    list: (prefix) => at.wrap(`listing ${prefix}`, async () => at.list(prefix)),
    delete: (name) => at.wrap(`deleting ${name}`, async () => fs.rmSync(at.file(name), { force: true })),
  };
}

/** The folder a local store keeps its objects in, and how each operation is done there. */
class LocalFolder {
  private reaped = false;

  constructor(private readonly root: string) {}

  /** An object's file; a name that could leave the folder, or too long for it, is refused. */
  file(name: string): string {
    const parts = name.split("/");
    for (const p of parts) {
      if (p === "" || p === "." || p === ".." || p === TMP) throw new Error(`bad object name ${name}`);
      if (Buffer.byteLength(p) > 255) {
        throw new StoreError(
          `${name}: a name part is over 255 bytes, too long for the local store; use a shorter key prefix`,
        );
      }
    }
    return path.join(this.root, ...parts);
  }

  private tmpFile(): string {
    const dir = tmpFolder(this.root);
    makeFolders(dir);
    return path.join(dir, `${host()}-${process.pid}-${randomBytes(6).toString("hex")}`);
  }

  /** Runs one operation; a filesystem error becomes a StoreError naming the store and what was done. */
  async wrap<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof StoreError || e instanceof ObjectNotFound) throw e;
      throw new StoreError(`local store ${this.root}: ${what}: ${(e as Error).message}`, e);
    }
  }

  async put(name: string, body: Readable): Promise<{ size: number }> {
    const dest = this.file(name);
    if (!this.reaped) {
      this.reaped = true;
      reapTemporary(tmpFolder(this.root));
    }
    const tmp = this.tmpFile();
    try {
      await pipeline(body, fs.createWriteStream(tmp));
      const size = fs.statSync(tmp).size;
      makeFolders(path.dirname(dest));
      fs.renameSync(tmp, dest);
      return { size };
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }

  async createIfAbsent(name: string, body: Buffer): Promise<boolean> {
    const dest = this.file(name);
    const tmp = this.tmpFile();
    try {
      fs.writeFileSync(tmp, body);
      makeFolders(path.dirname(dest));
      fs.linkSync(tmp, dest);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw e;
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }

  /** An object's file, opened for reading: it must be a regular file (READ_FLAGS says why). */
  private async open(name: string): Promise<{ fd: fs.promises.FileHandle; size: number }> {
    const fd = await fs.promises.open(this.file(name), READ_FLAGS).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") throw new ObjectNotFound(name);
      if (e.code === "ELOOP" || e.code === "EMLINK") throw this.fault(name, "a symbolic link");
      throw e;
    });
    const st = await fd.stat().catch(async (e: Error) => {
      await fd.close();
      throw e;
    });
    if (!st.isFile()) {
      await fd.close();
      throw this.fault(name, what(st));
    }
    return { fd, size: st.size };
  }

  private fault(name: string, lies: string): ObjectFault {
    return new ObjectFault(
      `local store ${this.root}: ${name}: ${lies} lies where the object should be, not a file kcache wrote; refused (remove it)`,
    );
  }

  /** The file of an object read in place (by worker threads): refused when it is not a regular file. */
  regularFile(name: string): string {
    const file = this.file(name);
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (st && !st.isFile()) throw this.fault(name, what(st));
    return file;
  }

  async exists(name: string): Promise<boolean> {
    return fs.lstatSync(this.file(name), { throwIfNoEntry: false })?.isFile() === true;
  }

  async get(name: string): Promise<Readable> {
    const { fd } = await this.open(name);
    return fd.createReadStream({ highWaterMark: 1 << 20 }) as Readable;
  }

  async getRange(name: string, offset: number, length: number): Promise<Readable> {
    const { fd, size } = await this.open(name);
    if (offset + length > size) {
      await fd.close();
      // The object is short (damaged, or not what its reader was promised): that object's fault alone.
      throw new ObjectFault(
        `local store ${this.root}: ${name}: bytes ${offset}-${offset + length} asked of an object of ${size}`,
      );
    }
    return fd.createReadStream({
      start: offset,
      end: offset + length - 1,
      highWaterMark: 1 << 20,
    }) as Readable;
  }

  async read(name: string, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer | null> {
    let opened: { fd: fs.promises.FileHandle; size: number };
    try {
      opened = await this.open(name);
    } catch (e) {
      if (e instanceof ObjectNotFound) return null;
      throw e;
    }
    const { fd, size } = opened;
    try {
      if (size > maxBytes)
        throw new ObjectFault(
          `local store ${this.root}: ${name}: ${size} bytes, more than the ${maxBytes} its reader allows; refused`,
        );
      const buf = Buffer.alloc(size);
      let got = 0;
      while (got < size) {
        const { bytesRead } = await fd.read(buf, got, size - got, got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return buf.subarray(0, got);
    } finally {
      await fd.close();
    }
  }

  /** Objects whose names start with `prefix`, newest first, walking only the folders that can hold them. */
  list(prefix: string): StoredObject[] {
    const { root } = this;
    const slash = prefix.lastIndexOf("/");
    const out: StoredObject[] = [];
    const walk = (rel: string) => {
      let items: fs.Dirent[];
      try {
        items = fs.readdirSync(rel ? path.join(root, rel) : root, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
        // A folder below the root that cannot be read (a name past PATH_MAX, no permission) holds no
        // object kcache could read either: passed over, not the whole listing failed.
        if (rel) return;
        throw e;
      }
      for (const d of items) {
        if (!rel && d.name === TMP) continue;
        const name = rel ? `${rel}/${d.name}` : d.name;
        if (d.isDirectory()) {
          if (prefix.startsWith(`${name}/`) || name.startsWith(prefix)) walk(name);
        } else if (d.isFile() && name.startsWith(prefix)) {
          // lstat: never through a link; an object deleted since the folder was read is not listed.
          const st = fs.lstatSync(path.join(root, name), { throwIfNoEntry: false });
          if (st?.isFile()) out.push({ name, size: st.size, modified: st.mtime });
        }
      }
    };
    walk(slash >= 0 ? prefix.slice(0, slash) : "");
    return out.sort((a, b) => b.modified.getTime() - a.modified.getTime() || (a.name < b.name ? 1 : -1));
  }
}

/** What lies where an object should, for a message. */
function what(st: fs.Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isDirectory()) return "a folder";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSocket()) return "a socket";
  return "something other than a file";
}

/**
 * The store's folder of temporary files, as a folder of its own: anything else found in its place (a
 * link another writer of the store left, to packs/ say, a file, a FIFO) is removed, never followed, so
 * neither a save's temporary files nor their reaping ever reach another folder's objects.
 */
function tmpFolder(root: string): string {
  const dir = path.join(root, TMP);
  const st = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (st && !st.isDirectory()) fs.rmSync(dir, { force: true });
  return dir;
}

/**
 * Removes temp files whose writer is gone: a dead process on this host, or older than a day. Only
 * files named as kcache names them; nothing else in the folder is touched, and nothing is followed.
 */
function reapTemporary(dir: string): number {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  let n = 0;
  const now = Date.now();
  for (const name of names) {
    const p = path.join(dir, name);
    const m = TMP_NAME.exec(name);
    const st = m ? fs.lstatSync(p, { throwIfNoEntry: false }) : undefined;
    if (!m || !st?.isFile()) continue;
    const ours = m[1] === host() && Number(m[2]) === process.pid;
    const gone = (m[1] === host() && !processAlive(Number(m[2]))) || now - st.mtimeMs > STALE_TMP_MS;
    if (gone && !ours) {
      fs.rmSync(p, { force: true });
      n++;
    }
  }
  return n;
}
