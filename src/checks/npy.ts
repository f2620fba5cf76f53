import fs from "node:fs";
import { ResultFileError } from "./check.js";

/** A numeric array read from a .npy file, as float64 values in C (row-major) order. */
export interface NpyArray {
  shape: number[];
  dtype: string;
  values: Float64Array;
}

/**
 * Reads NumPy's .npy format (versions 1-3): float16, float32, float64, and 2-byte void arrays as
 * bfloat16 (ml_dtypes saves its bfloat16 as '<V2') when `voidAs` says so. Fortran-ordered arrays are
 * returned in C order.
 */
export function readNpy(file: string, voidAs?: "bfloat16"): NpyArray {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(file);
  } catch {
    throw new ResultFileError(`${file}: not found`);
  }
  if (buf.length < 10 || buf.toString("latin1", 0, 6) !== "\x93NUMPY") {
    throw new ResultFileError(`${file}: not a .npy file (no \\x93NUMPY magic); save it with numpy.save`);
  }
  const major = buf[6] as number;
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString("latin1", start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || shapeText === undefined)
    throw new ResultFileError(`${file}: .npy header does not parse: ${header.trim()}`);
  const shape = shapeText
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const data = buf.subarray(start + headerLen);
  const little = descr[0] !== ">";
  const kind = descr.slice(1);
  const values = new Float64Array(count);
  const width = { f2: 2, f4: 4, f8: 8, V2: 2 }[kind];
  if (!width || (kind === "V2" && voidAs !== "bfloat16")) {
    throw new ResultFileError(
      `${file}: dtype ${descr} is not supported; use float16/32/64${kind === "V2" ? ", or set dtype: bfloat16 for 2-byte bfloat16 arrays" : ""}`,
    );
  }
  if (data.length < count * width)
    throw new ResultFileError(`${file}: truncated (${data.length} of ${count * width} data bytes)`);
  for (let i = 0; i < count; i++) {
    const o = i * width;
    values[i] =
      kind === "f8"
        ? little
          ? data.readDoubleLE(o)
          : data.readDoubleBE(o)
        : kind === "f4"
          ? little
            ? data.readFloatLE(o)
            : data.readFloatBE(o)
          : kind === "f2"
            ? half(little ? data.readUInt16LE(o) : data.readUInt16BE(o))
            : bfloat16(little ? data.readUInt16LE(o) : data.readUInt16BE(o));
  }
  return { shape, dtype: kind === "V2" ? "bfloat16" : descr, values: fortran ? toC(values, shape) : values };
}

function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function bfloat16(bits: number): number {
  u32[0] = bits << 16;
  return f32[0] as number;
}

/** Column-major values reordered to row-major. */
function toC(values: Float64Array, shape: number[]): Float64Array {
  const out = new Float64Array(values.length);
  const idx = new Array(shape.length).fill(0);
  for (let c = 0; c < values.length; c++) {
    let f = 0;
    let stride = 1;
    for (let d = 0; d < shape.length; d++) {
      f += idx[d] * stride;
      stride *= shape[d] as number;
    }
    out[c] = values[f] as number;
    for (let d = shape.length - 1; d >= 0; d--) {
      idx[d]++;
      if (idx[d] < (shape[d] as number)) break;
      idx[d] = 0;
    }
  }
  return out;
}

/** The multi-index of a flat C-order position. */
export function unravel(flat: number, shape: number[]): number[] {
  const out: number[] = [];
  let rest = flat;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d] as number;
    out.unshift(rest % n);
    rest = Math.floor(rest / n);
  }
  return out;
}
