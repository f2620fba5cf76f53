import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { normalizePickle, relocatePickle } from "../../src/kinds/pickle-rewriter.js";
import { normalizeText, ROOT_PLACEHOLDER, relocateText } from "../../src/kinds/root-placeholder.js";

const A = "/runner/a/torchinductor";
const B = "/home/ci/.cache/much/longer/inductor-é";

/** [value at A, the same value at B]: what relocation must make of each, text or pickled. */
const CASES: [string, string, string][] = [
  ["a path inside the folder", `# kernel path: ${A}/cf/ccf.py`, `# kernel path: ${B}/cf/ccf.py`],
  [
    "the folder, quoted",
    `os.environ['TORCHINDUCTOR_CACHE_DIR'] = '${A}'`,
    `os.environ['TORCHINDUCTOR_CACHE_DIR'] = '${B}'`,
  ],
  ["the folder, double-quoted", `"${A}"`, `"${B}"`],
  ["the folder alone", A, B],
  ["a sibling folder", `${A}_old/x.py`, `${A}_old/x.py`],
  ["a longer path ending in the folder", `/x${A}/y`, `/x${A}/y`],
  ["the folder followed by a name character", `${A}.bak`, `${A}.bak`],
  ["the placeholder itself in content", `x ${ROOT_PLACEHOLDER} y`, `x ${ROOT_PLACEHOLDER} y`],
  [
    "the escape in content",
    "@@KCACHE_INDUCTOR_LITERAL@@ and @@KCACHE_INDUCTOR_",
    "@@KCACHE_INDUCTOR_LITERAL@@ and @@KCACHE_INDUCTOR_",
  ],
  ["the placeholder glued to the folder", `${ROOT_PLACEHOLDER}${A}/z`, `${ROOT_PLACEHOLDER}${B}/z`],
  ["many paths", `${A}/a ${A}/b '${A}' ${A}x`, `${B}/a ${B}/b '${B}' ${A}x`],
  ["nothing of the folder", "def call(args):\n    pass\n", "def call(args):\n    pass\n"],
];

/** A pickle (protocol 4, framed) of the cases' values, as str and as bytes, plus a binary that names A. */
function pickleOf(values: string[]): Buffer {
  return execFileSync(
    "python3",
    [
      "-c",
      `import json, pickle, sys
values = json.loads(sys.stdin.read())
sys.stdout.buffer.write(pickle.dumps({"text": values, "bytes": [v.encode() for v in values], "cubin": b"\\0ELF" + sys.argv[1].encode()}, protocol=4))`,
      A,
    ],
    { input: JSON.stringify(values) },
  );
}

function unpickled(data: Buffer): { text: string[]; bytes: string[]; cubin: string } {
  return JSON.parse(
    execFileSync(
      "python3",
      [
        "-c",
        `import json, pickle, sys
d = pickle.loads(sys.stdin.buffer.read())
print(json.dumps({"text": d["text"], "bytes": [b.decode() for b in d["bytes"]], "cubin": d["cubin"].decode("latin-1")}))`,
      ],
      { input: data },
    ).toString(),
  );
}

describe("the placeholder for torch.compile's cache folder: whole paths only, content never mistaken for it", () => {
  it.each(CASES)("text: %s", (_what, atA, atB) => {
    const stored = normalizeText(Buffer.from(atA), [A]);
    if (atA !== atB) expect(stored.toString()).toContain(ROOT_PLACEHOLDER);
    expect(relocateText(stored, B).toString()).toBe(atB);
    // Back at A: byte for byte what it was.
    expect(relocateText(stored, A).toString()).toBe(atA);
  });

  it("pickles: the same rules inside every string and text-bytes value (python/kcache_pickle/rewrite.py), binaries untouched", () => {
    const original = pickleOf(CASES.map((c) => c[1]));
    const stored = normalizePickle(original, [A]);
    const atB = unpickled(relocatePickle(stored, B));
    expect(atB.text).toEqual(CASES.map((c) => c[2]));
    expect(atB.bytes).toEqual(CASES.map((c) => c[2]));
    expect(atB.cubin).toBe(`\0ELF${A}`);
    // Back at A, the very bytes pickle wrote, frames and all; stored again, the very stored bytes.
    expect(relocatePickle(stored, A).equals(original)).toBe(true);
    expect(normalizePickle(relocatePickle(stored, B), [B]).equals(stored)).toBe(true);
  });

  it("a pickle of many frames: frames that name nothing are copied as they are, the others rewritten", () => {
    // ~8 frames of 64 KiB; the folder is named only in values 600-620, which share a frame or two.
    const values = Array.from({ length: 1200 }, (_, i) =>
      i >= 600 && i < 620 ? `${A}/k${i}/kernel.py` : `value ${i} ${"x".repeat(200)}`,
    );
    const original = pickleOf(values);
    expect(original.length).toBeGreaterThan(6 * 65536);
    const stored = normalizePickle(original, [A]);
    expect(stored.includes(A)).toBe(true); // only inside the binary, which is never touched
    expect(stored.toString("latin1").split(ROOT_PLACEHOLDER).length - 1).toBe(40);
    const atB = unpickled(relocatePickle(stored, B));
    expect(atB.text).toEqual(values.map((v) => v.replaceAll(A, B)));
    expect(atB.bytes).toEqual(values.map((v) => v.replaceAll(A, B)));
    expect(relocatePickle(stored, A).equals(original)).toBe(true);
  });

  it("a module that is not UTF-8 keeps every byte but the folder's path", () => {
    const latin = Buffer.concat([
      Buffer.from(`# ${A}/x.py `),
      Buffer.from([0xe9, 0xff, 0x00, 0x80]),
      Buffer.from(` ${A}`),
    ]);
    const stored = normalizeText(latin, [A]);
    const atB = relocateText(stored, B);
    expect(
      atB.equals(
        Buffer.concat([
          Buffer.from(`# ${B}/x.py `),
          Buffer.from([0xe9, 0xff, 0x00, 0x80]),
          Buffer.from(` ${B}`),
        ]),
      ),
    ).toBe(true);
    expect(relocateText(stored, A).equals(latin)).toBe(true);
  });

  it("a pickle that names nothing is stored and placed byte for byte, without running Python", () => {
    const plain = execFileSync("python3", [
      "-c",
      "import pickle, sys; sys.stdout.buffer.write(pickle.dumps({'x': '/elsewhere'}, protocol=4))",
    ]);
    // No @@KCACHE_INDUCTOR_ and no folder in it: returned as the same buffer.
    expect(normalizePickle(plain, [A])).toBe(plain);
    expect(relocatePickle(plain, B)).toBe(plain);
  });
});
