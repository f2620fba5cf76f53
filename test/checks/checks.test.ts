import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCheck } from "../../src/checks/run-checks.js";
import { checkSchema } from "../../src/config/profile-schema.js";
import { writeNpy } from "../fixtures/npy.js";
import { tempDir } from "../helpers/sandbox.js";

async function check(dir: string, raw: Record<string, unknown>) {
  return runCheck(checkSchema.parse(raw), 0, dir, { PATH: process.env.PATH }, path.join(dir, "check.log"));
}

function results(dir: string, file: string, records: unknown[], wrap = true) {
  fs.writeFileSync(
    path.join(dir, file),
    JSON.stringify(wrap ? { machine_info: {}, results: records } : records),
  );
}

const SHAPES = [
  { B: 1, T: 2048, H: 16, D: 128 },
  { B: 2, T: 4096, H: 16, D: 128 },
  { B: 1, T: 8192, H: 8, D: 64 },
];
const kda = (drop = 0, dup = 0) => {
  const rs = SHAPES.flatMap((s) =>
    ["fwd", "fwdbwd"].map((mode) => ({
      op: "chunk_kda",
      mode,
      ...s,
      median_ms: 1.2,
      p20_ms: 1.1,
      p80_ms: 1.3,
    })),
  );
  return [...rs.slice(drop), ...rs.slice(drop, drop + dup)];
};
const COVERAGE = {
  type: "coverage",
  file: "kda.json",
  key: ["op", "mode", "B", "T", "H", "D"],
  expect: { product: [{ op: ["chunk_kda"] }, SHAPES, { mode: ["fwd", "fwdbwd"] }] },
};

describe("coverage", () => {
  it("passes when every case of the product is present once", async () => {
    const dir = tempDir();
    results(dir, "kda.json", kda());
    const r = await check(dir, COVERAGE);
    expect(r).toMatchObject({ passed: true, message: "6 of 6 expected records, each present once" });
  });

  it("names missing and duplicated records", async () => {
    const dir = tempDir();
    results(dir, "kda.json", kda(1, 2));
    const r = await check(dir, COVERAGE);
    expect(r.passed).toBe(false);
    expect(r.message).toContain("missing 1: op=chunk_kda mode=fwd B=1 T=2048 H=16 D=128 (0 of 1)");
    expect(r.message).toContain("duplicated: op=chunk_kda mode=fwdbwd B=1 T=2048 H=16 D=128 (2 times)");
  });

  it("checks a count, and a list, and says where the records are not", async () => {
    const dir = tempDir();
    results(dir, "kda.json", kda());
    expect(await check(dir, { type: "coverage", file: "kda.json", expect: { count: 12 } })).toMatchObject({
      passed: false,
      message: expect.stringContaining("6 records, expected 12"),
    });
    expect(
      await check(dir, { type: "coverage", file: "kda.json", expect: { list: [{ mode: "fwd" }], each: 3 } }),
    ).toMatchObject({ passed: true });
    results(dir, "other.json", { nothing: [] } as unknown as unknown[], false);
    expect(
      (await check(dir, { type: "coverage", file: "other.json", expect: { count: 1 } })).message,
    ).toMatch(/other\.json: no array of records at "results"; set records:/);
    expect(
      (await check(dir, { type: "coverage", file: "absent.json", expect: { count: 1 } })).message,
    ).toMatch(/absent\.json: not found/);
  });
});

describe("finite-positive", () => {
  it("passes on real timings and names NaN, zero, negative and missing values", async () => {
    const dir = tempDir();
    results(dir, "kda.json", kda());
    expect(
      await check(dir, {
        type: "finite-positive",
        file: "kda.json",
        fields: ["median_ms", "p20_ms", "p80_ms"],
      }),
    ).toMatchObject({
      passed: true,
    });
    // JSON has no NaN; Python's json.dump writes it anyway, as NaN.
    fs.writeFileSync(
      path.join(dir, "bad.json"),
      '{"results": [{"median_ms": 1.0, "p20_ms": 0}, {"median_ms": -2, "p20_ms": 1}, {"p20_ms": 1}]}',
    );
    const r = await check(dir, {
      type: "finite-positive",
      file: "bad.json",
      fields: ["median_ms", "p20_ms"],
    });
    expect(r.passed).toBe(false);
    expect(r.message).toContain("record 0 p20_ms=0");
    expect(r.message).toContain("record 1 median_ms=-2");
    expect(r.message).toContain("record 2 median_ms=(missing)");
    fs.writeFileSync(path.join(dir, "nan.json"), '{"results": [{"median_ms": NaN}]}');
    expect(
      (await check(dir, { type: "finite-positive", file: "nan.json", fields: ["median_ms"] })).message,
    ).toMatch(/not valid JSON/);
  });
});

describe("threshold", () => {
  it("compares with an absolute bound", async () => {
    const dir = tempDir();
    results(dir, "kda.json", kda());
    expect(
      await check(dir, { type: "threshold", file: "kda.json", field: "median_ms", "<=": 2 }),
    ).toMatchObject({ passed: true });
    const r = await check(dir, {
      type: "threshold",
      file: "kda.json",
      field: "median_ms",
      "<": 1,
      key: ["mode", "T"],
    });
    expect(r.passed).toBe(false);
    expect(r.message).toContain("6 of 6 records break median_ms < 1: mode=fwd T=2048: median_ms 1.2 not < 1");
  });

  it("compares with a baseline file, record by record", async () => {
    const dir = tempDir();
    results(dir, "base.json", kda());
    const head = kda().map((r, i) => (i === 3 ? { ...r, median_ms: 1.5 } : r));
    results(dir, "head.json", head);
    const spec = {
      type: "threshold",
      file: "head.json",
      baseline: "base.json",
      key: ["mode", "T"],
      field: "median_ms",
      "<=": 1.1,
    };
    const r = await check(dir, spec);
    expect(r.passed).toBe(false);
    expect(r.message).toContain(
      "1 of 6 records break median_ms / baseline <= 1.1: mode=fwdbwd T=4096: median_ms ratio 1.25 not <= 1.1",
    );
  });

  it("refuses a threshold without exactly one bound", () => {
    expect(() => checkSchema.parse({ type: "threshold", file: "x", field: "y" })).toThrow(
      /exactly one bound/,
    );
  });
});

describe("allclose", () => {
  it.each(["f2", "f4", "f8", "bf16"] as const)(
    "passes within tolerance and reports the worst element (%s)",
    async (dtype) => {
      const dir = tempDir();
      const a = Array.from({ length: 12 }, (_, i) => i * 0.5);
      writeNpy(path.join(dir, "out.npy"), dtype, [3, 4], a);
      writeNpy(
        path.join(dir, "ref.npy"),
        dtype,
        [3, 4],
        a.map((v) => v + (dtype === "f8" ? 1e-9 : 0)),
      );
      const spec = {
        type: "allclose",
        a: "out.npy",
        b: "ref.npy",
        rtol: 1e-3,
        atol: 1e-3,
        ...(dtype === "bf16" ? { dtype: "bfloat16" } : {}),
      };
      expect(await check(dir, spec)).toMatchObject({ passed: true });

      const off = [...a];
      off[6] = 100;
      writeNpy(path.join(dir, "out.npy"), dtype, [3, 4], off);
      const r = await check(dir, spec);
      expect(r.passed).toBe(false);
      expect(r.message).toMatch(
        /1 of 12 values differ beyond rtol=0\.001 atol=0\.001; max abs error 9\.700e\+1, .* worst at \[1, 2\]: 100 vs 3/,
      );
      expect(r.details).toMatchObject({ worstIndex: [1, 2], mismatched: 1 });
    },
  );

  it("with max-norm-error, fails a wrong kernel whose small outputs atol alone would let pass", async () => {
    const dir = tempDir();
    // A reference of small values (fp16 matmul outputs near zero) and a kernel off by 50% everywhere.
    const ref = Array.from({ length: 64 }, (_, i) => 0.01 * Math.sin(i + 1));
    writeNpy(path.join(dir, "ref.npy"), "f4", [8, 8], ref);
    writeNpy(
      path.join(dir, "wrong.npy"),
      "f4",
      [8, 8],
      ref.map((v) => v * 1.5),
    );
    writeNpy(
      path.join(dir, "right.npy"),
      "f4",
      [8, 8],
      ref.map((v) => v * (1 + 1e-4)),
    );
    const loose = { type: "allclose", b: "ref.npy", rtol: 0.01, atol: 0.05 };
    expect(await check(dir, { ...loose, a: "wrong.npy" })).toMatchObject({ passed: true });
    const bounded = { ...loose, "max-norm-error": 0.005 };
    const wrong = await check(dir, { ...bounded, a: "wrong.npy" });
    expect(wrong.passed).toBe(false);
    expect(wrong.message).toMatch(/relative L2 error 5\.000e-1 exceeds max-norm-error 0\.005/);
    expect(await check(dir, { ...bounded, a: "right.npy" })).toMatchObject({ passed: true });
  });

  it("treats NaN as equal to NaN only, and names a shape mismatch", async () => {
    const dir = tempDir();
    writeNpy(path.join(dir, "a.npy"), "f4", [3], [1, Number.NaN, 3]);
    writeNpy(path.join(dir, "b.npy"), "f4", [3], [1, Number.NaN, 3]);
    writeNpy(path.join(dir, "c.npy"), "f4", [3], [1, 2, 3]);
    writeNpy(path.join(dir, "d.npy"), "f4", [1, 3], [1, 2, 3]);
    expect(await check(dir, { type: "allclose", a: "a.npy", b: "b.npy" })).toMatchObject({ passed: true });
    expect(await check(dir, { type: "allclose", a: "a.npy", b: "c.npy" })).toMatchObject({
      passed: false,
      details: { worstIndex: [1] },
    });
    expect((await check(dir, { type: "allclose", a: "c.npy", b: "d.npy" })).message).toMatch(
      /shape \(3\) differs from .*d\.npy \(1, 3\)/,
    );
  });

  it("reads Fortran-ordered arrays in row-major order", async () => {
    const dir = tempDir();
    writeNpy(path.join(dir, "c.npy"), "f8", [2, 3], [1, 2, 3, 4, 5, 6]);
    writeNpy(path.join(dir, "f.npy"), "f8", [2, 3], [1, 4, 2, 5, 3, 6], true);
    expect(await check(dir, { type: "allclose", a: "c.npy", b: "f.npy", rtol: 0, atol: 0 })).toMatchObject({
      passed: true,
    });
  });

  it("asks for dtype: bfloat16 before reading 2-byte void arrays", async () => {
    const dir = tempDir();
    writeNpy(path.join(dir, "a.npy"), "bf16", [2], [1, 2]);
    expect((await check(dir, { type: "allclose", a: "a.npy", b: "a.npy" })).message).toMatch(
      /set dtype: bfloat16/,
    );
  });
});

describe("agree", () => {
  it("matches records on key fields and compares listed fields within tolerance", async () => {
    const dir = tempDir();
    const eager = [
      { case: 1, multibuffer: true, out_sum: 10.0, state_norm: 3.0 },
      { case: 2, multibuffer: false, out_sum: 20.0, state_norm: 4.0 },
    ];
    results(dir, "eager.json", eager);
    results(
      dir,
      "graph.json",
      [...eager].reverse().map((r) => ({ ...r, out_sum: r.out_sum * (1 + 1e-5) })),
    );
    const spec = {
      type: "agree",
      a: "graph.json",
      b: "eager.json",
      key: ["case", "multibuffer"],
      fields: ["out_sum", "state_norm"],
      rtol: 1e-4,
    };
    expect(await check(dir, spec)).toMatchObject({ passed: true });

    results(dir, "graph.json", [
      { ...eager[0], out_sum: 11 },
      { case: 3, multibuffer: true, out_sum: 1, state_norm: 1 },
    ]);
    const r = await check(dir, spec);
    expect(r.passed).toBe(false);
    expect(r.message).toContain("case=1 multibuffer=true: out_sum=11 vs out_sum=10");
    expect(r.message).toMatch(/only in .*graph\.json: case=3 multibuffer=true/);
    expect(r.message).toMatch(/only in .*eager\.json: case=2 multibuffer=false/);
  });

  it("compares differently named fields with x=y", async () => {
    const dir = tempDir();
    results(dir, "g.json", [{ case: 1, graph_out: 2.0 }]);
    results(dir, "e.json", [{ case: 1, eager_out: 2.5 }]);
    const r = await check(dir, {
      type: "agree",
      a: "g.json",
      b: "e.json",
      key: ["case"],
      fields: ["graph_out=eager_out"],
    });
    expect(r.message).toContain("case=1: graph_out=2 vs eager_out=2.5");
  });
});

describe("command", () => {
  it("passes on exit 0 and fails otherwise, pointing at its log", async () => {
    const dir = tempDir();
    expect(await check(dir, { type: "command", run: "test 1 -eq 1" })).toMatchObject({ passed: true });
    const r = await check(dir, { type: "command", run: "echo nope; exit 4" });
    expect(r).toMatchObject({ passed: false, details: { exitCode: 4 } });
    expect(r.message).toContain("exited 4; its output is in");
    expect(fs.readFileSync(path.join(dir, "check.log"), "utf8")).toBe("nope\n");
  });
});
