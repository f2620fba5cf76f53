/**
 * A synchronous tar reader over buffers, for kcache's own packs: ustar headers (with the prefix
 * field), PAX extended headers (`path`, `size`) and GNU long names. It holds no member's data: each
 * chunk of a member goes straight to the sink the caller returned for it. Every header's checksum is
 * verified; a malformed header ends the read with an error. What a member may be is the caller's
 * policy: the reader only reports its path, size and type.
 */

/** A member's type, named as node-tar names them. */
export type MemberType =
  | "File"
  | "OldFile"
  | "ContiguousFile"
  | "Link"
  | "SymbolicLink"
  | "CharacterDevice"
  | "BlockDevice"
  | "Directory"
  | "FIFO"
  | "Unsupported";

export interface TarMember {
  path: string;
  size: number;
  type: MemberType;
}

/** Where a member's data goes. `data` chunks are views of the reader's input: copy what is kept. */
export interface MemberSink {
  data(chunk: Buffer): void;
  end(): void;
}

const TYPES: Record<string, MemberType> = {
  "\0": "OldFile",
  "0": "File",
  "1": "Link",
  "2": "SymbolicLink",
  "3": "CharacterDevice",
  "4": "BlockDevice",
  "5": "Directory",
  "6": "FIFO",
  "7": "ContiguousFile",
};
/** PAX and GNU long-name headers larger than this are refused: they describe one name, not data. */
const MAX_META = 1024 * 1024;
const BLOCK = 512;

interface Pending {
  path?: string;
  size?: number;
}

export class TarReader {
  /** Set once the end-of-archive block is read; later bytes are ignored. */
  ended = false;
  private readonly header = Buffer.alloc(BLOCK);
  private headerFill = 0;
  /** Data bytes left in the current member (or metadata record), then its padding. */
  private remaining = 0;
  private padding = 0;
  private sink: MemberSink | null = null;
  /** A PAX or long-name record being collected, and what it will say of the next member. */
  private meta: { type: string; chunks: Buffer[] } | null = null;
  private pending: Pending = {};
  private offset = 0;

  constructor(private readonly onMember: (m: TarMember) => MemberSink | null) {}

  write(buf: Buffer): void {
    let o = 0;
    while (o < buf.length && !this.ended) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, buf.length - o);
        const chunk = buf.subarray(o, o + n);
        if (this.meta) this.meta.chunks.push(Buffer.from(chunk));
        else this.sink?.data(chunk);
        o += n;
        this.remaining -= n;
        if (this.remaining === 0) this.endData();
        continue;
      }
      if (this.padding > 0) {
        const n = Math.min(this.padding, buf.length - o);
        o += n;
        this.padding -= n;
        continue;
      }
      const n = Math.min(BLOCK - this.headerFill, buf.length - o);
      buf.copy(this.header, this.headerFill, o, o + n);
      this.headerFill += n;
      o += n;
      if (this.headerFill === BLOCK) {
        this.headerFill = 0;
        this.readHeader();
      }
    }
    this.offset += buf.length;
  }

  /** The input ended: an error when it ended inside a header or a member. */
  end(): void {
    if (this.ended) return;
    if (this.remaining > 0 || this.headerFill > 0 || this.padding > 0)
      throw new Error("tar data ends inside a member (truncated?)");
  }

  private endData(): void {
    const pad = this.sizeOfData % BLOCK;
    this.padding = pad === 0 ? 0 : BLOCK - pad;
    if (this.meta) {
      this.applyMeta(this.meta.type, Buffer.concat(this.meta.chunks));
      this.meta = null;
      return;
    }
    const sink = this.sink;
    this.sink = null;
    sink?.end();
  }

  private sizeOfData = 0;

  private readHeader(): void {
    const h = this.header;
    if (h.every((b) => b === 0)) {
      this.ended = true;
      return;
    }
    const at = this.offset;
    const stored = parseOctal(h, 148, 8);
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] as number);
    if (stored !== sum) throw new Error(`invalid tar header near byte ${at} (checksum mismatch)`);
    const size = parseSize(h, at);
    const flag = String.fromCharCode(h[156] as number);
    this.sizeOfData = size;
    if (flag === "x" || flag === "g" || flag === "L" || flag === "K") {
      if (size > MAX_META) throw new Error(`tar metadata record of ${size} bytes near byte ${at}`);
      this.meta = { type: flag, chunks: [] };
      this.remaining = size;
      if (size === 0) this.endData();
      return;
    }
    let name = cString(h, 0, 100);
    if (h.toString("latin1", 257, 262) === "ustar") {
      const prefix = cString(h, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    const member: TarMember = {
      path: this.pending.path ?? name,
      size: this.pending.size ?? size,
      type: TYPES[flag] ?? "Unsupported",
    };
    this.pending = {};
    // Links, folders and devices carry no data whatever their size field says.
    const dataSize =
      member.type === "File" || member.type === "OldFile" || member.type === "ContiguousFile"
        ? member.size
        : 0;
    member.size = dataSize;
    this.sizeOfData = dataSize;
    this.sink = this.onMember(member);
    this.remaining = dataSize;
    if (dataSize === 0) this.endData();
  }

  private applyMeta(type: string, data: Buffer): void {
    if (type === "L") this.pending.path = cString(data, 0, data.length);
    if (type !== "x") return;
    // PAX records: "<length> <key>=<value>\n".
    let o = 0;
    while (o < data.length) {
      const space = data.indexOf(0x20, o);
      const len = Number(data.toString("latin1", o, space));
      if (space < 0 || !Number.isInteger(len) || len <= 0 || o + len > data.length)
        throw new Error("malformed PAX header");
      const record = data.toString("utf8", space + 1, o + len - 1);
      const eq = record.indexOf("=");
      const key = record.slice(0, eq);
      const value = record.slice(eq + 1);
      if (key === "path") this.pending.path = value;
      if (key === "size") {
        const n = Number(value);
        if (!Number.isSafeInteger(n) || n < 0) throw new Error(`malformed PAX size ${value}`);
        this.pending.size = n;
      }
      o += len;
    }
  }
}

function cString(b: Buffer, start: number, length: number): string {
  const end = b.indexOf(0, start);
  return b.toString("utf8", start, end < 0 || end > start + length ? start + length : end);
}

function parseOctal(b: Buffer, start: number, length: number): number {
  const text = b
    .toString("latin1", start, start + length)
    .replace(/[\0 ]+$/, "")
    .trim();
  if (!/^[0-7]*$/.test(text)) return Number.NaN;
  return text === "" ? 0 : Number.parseInt(text, 8);
}

/** The size field: octal, or base-256 when its top bit is set (files of 8 GiB and more). */
function parseSize(h: Buffer, at: number): number {
  let n: number;
  if ((h[124] as number) & 0x80) {
    n = (h[124] as number) & 0x7f;
    for (let i = 125; i < 136; i++) n = n * 256 + (h[i] as number);
  } else n = parseOctal(h, 124, 12);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`invalid tar size field near byte ${at}`);
  return n;
}
