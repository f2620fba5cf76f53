import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  decodePlan,
  encodePlan,
  insideCheckout,
  MAX_ENTRY_BYTES,
  MAX_ENTRY_DEPTH,
  MAX_PLAN_BYTES,
  mergedEntries,
  PLAN_FORMAT,
  type Plan,
  type PlanEntry,
  recordedPlan,
} from "../../../src/cache/plan/plan.js";
import { IntegrityError } from "../../../src/errors.js";
import { stackMismatch } from "../../../src/pipeline/cpu-prewarm/gpu-base.js";
import { fingerprintFrom } from "../../../src/stack/fingerprint.js";
import { TEST_PYTHON } from "../../helpers/test-stack.js";

/* The compile plan's format (src/cpu-prewarm/plan.ts) and the GPU base's stack test (gpu-base.ts), as units. */

const hex = (c: string) => c.repeat(64);

function entry(over: Partial<PlanEntry> = {}): PlanEntry {
  return {
    module: "lib.ops",
    qualname: "fwd_kernel",
    name: "fwd_kernel",
    file: "lib/ops.py",
    fnKey: hex("a"),
    hash: hex("b"),
    target: ["cuda", 90, 32],
    signature: { x_ptr: "*fp32", n: "i32", BLOCK: "constexpr" },
    constexprs: [[[2], 64]],
    attrs: [[[0], [["tt.divisibility", 16]]]],
    options: { num_warps: 4 },
    env: {},
    triton: "3.6.0",
    ...over,
  };
}

function plan(entries: PlanEntry[] = [entry()]): Plan {
  return {
    format: PLAN_FORMAT,
    key: "ops-65af0b7dfc02-1111",
    scope: "branch/main",
    revision: "1111",
    createdAt: "2026-01-01T00:00:00.000Z",
    device: { target: ["cuda", 90, 32] },
    entries,
  };
}

const OBJECT = "plans/branch%2Fmain/ops-65af0b7dfc02-1111.json";
const decode = (p: unknown) => decodePlan(Buffer.from(JSON.stringify(p)), OBJECT);

describe("insideCheckout: a checkout-relative POSIX path to a Python file that stays inside", () => {
  it.each(["a/b.py", "ops.py", "lib/sub/kernels.py"])("%s is kept", (file) => {
    expect(insideCheckout(file)).toBe(file);
  });

  it.each([
    ["../x.py", "leaves the checkout"],
    ["/abs.py", "absolute"],
    ["a/../b.py", "not normal (a .. inside)"],
    ["./a.py", "not normal (a leading ./)"],
    ["a//b.py", "not normal (an empty part)"],
    ["a\\b.py", "a Windows separator"],
    ["x.txt", "not a Python file"],
    ["..", "the parent itself"],
    [".", "the checkout itself"],
    ["a\0.py", "a NUL byte"],
  ])("%s is refused (%s)", (file) => {
    expect(insideCheckout(file)).toBeNull();
  });
});

describe("decodePlan: a stored plan read as data a job wrote", () => {
  it("reads a plan of the right shape back as it was written", () => {
    const p = plan([entry(), entry({ qualname: "bwd_kernel", hash: hex("c") })]);
    expect(decodePlan(encodePlan(p), OBJECT)).toEqual(p);
  });

  it("refuses what is not JSON", () => {
    expect(() => decodePlan(Buffer.from("{not json"), OBJECT)).toThrow(IntegrityError);
    expect(() => decodePlan(Buffer.from("{not json"), OBJECT)).toThrow(`plan ${OBJECT} is not JSON: refused`);
  });

  it("refuses another format, a missing field, an unknown field, a short hash", () => {
    expect(() => decode({ ...plan(), format: "kcache-plan/2" })).toThrow(/damaged at "format": .*refused/);
    const { entries: _, ...noEntries } = plan();
    expect(() => decode(noEntries)).toThrow(/damaged at "entries"/);
    expect(() => decode({ ...plan(), extra: 1 })).toThrow(/damaged at its top/);
    expect(() => decode(plan([entry({ hash: "abc" })]))).toThrow(/damaged at "entries"\.0\."hash"/);
    expect(() => decode(plan([{ ...entry(), module: "os; import x" }]))).toThrow(
      /damaged at "entries"\.0\."module"/,
    );
  });

  it("refuses more bytes than a plan may take, before parsing them", () => {
    const big = Buffer.alloc(MAX_PLAN_BYTES + 1, 0x20);
    expect(() => decodePlan(big, OBJECT)).toThrow(
      `plan ${OBJECT} is ${MAX_PLAN_BYTES + 1} bytes, over ${MAX_PLAN_BYTES}: refused`,
    );
  });

  it("refuses an entry over its size bound", () => {
    const fat = entry({ env: { BIG: "x".repeat(4000) }, options: { pad: "y".repeat(MAX_ENTRY_BYTES) } });
    expect(() => decode(plan([fat]))).toThrow(
      `plan ${OBJECT}: entry 0 is over ${MAX_ENTRY_BYTES} bytes; refused`,
    );
  });

  it("refuses, as damage (IntegrityError, not a crash), an entry nested deeper than a stack can write down", () => {
    const d = 20_000;
    const text = JSON.stringify(plan([entry({ options: { deep: "@@" } })])).replace(
      '"@@"',
      `${"[".repeat(d)}${"]".repeat(d)}`,
    );
    expect(() => decodePlan(Buffer.from(text), OBJECT)).toThrow(IntegrityError);
    expect(() => decodePlan(Buffer.from(text), OBJECT)).toThrow(
      `plan ${OBJECT}: entry 0 is nested over ${MAX_ENTRY_DEPTH} deep; refused`,
    );
  });

  it.each(["../outside.py", "/etc/outside.py", "lib/../../x.py", "lib/ops.txt"])(
    "refuses the whole plan when one entry names %s, naming the plan and the entry",
    (file) => {
      const p = plan([entry(), entry({ qualname: "bwd_kernel", hash: hex("c"), file })]);
      expect(() => decode(p)).toThrow(
        `plan ${OBJECT}: entry 1 (lib.ops.bwd_kernel) names ${JSON.stringify(file)}, which is not a Python file inside the checkout; the plan is refused`,
      );
    },
  );
});

describe("recordedPlan: the hook's lines made into entries relative to the checkout", () => {
  const root = path.resolve("/work/checkout");
  const line = (over: Record<string, unknown> = {}) => ({
    v: 1,
    ...entry(),
    file: path.join(root, "lib", "ops.py"),
    ...over,
  });

  it("drops a line nested deeper than a stack can write down (a job's process wrote it), keeps the rest", () => {
    let deep: unknown = [];
    for (let i = 0; i < 20_000; i++) deep = [deep];
    const r = recordedPlan([line({ hash: hex("c"), options: { deep } }), line()], [], root);
    expect(r.entries.map((e) => e.hash)).toEqual([hex("b")]);
  });

  it("makes each file relative to the checkout and drops the hook's own fields", () => {
    const r = recordedPlan([line()], [], root);
    expect(r.entries).toEqual([entry()]);
    expect(r.outside).toEqual([]);
  });

  it("leaves files outside the checkout out, in `outside`, by name (once each)", () => {
    const r = recordedPlan(
      [
        line(),
        line({
          module: "torch._inductor.gen",
          qualname: "triton_poi",
          hash: hex("c"),
          file: "/tmp/torchinductor/x.py",
        }),
        line({
          module: "torch._inductor.gen",
          qualname: "triton_poi",
          hash: hex("d"),
          file: "/tmp/torchinductor/x.py",
        }),
        line({ module: "up", qualname: "k", hash: hex("e"), file: path.join(root, "..", "up.py") }),
      ],
      [],
      root,
    );
    expect(r.entries.map((e) => e.hash)).toEqual([hex("b")]);
    expect(r.outside).toEqual(["torch._inductor.gen.triton_poi", "up.k"]);
  });

  it("keeps one entry per cache key, drops lines of the wrong shape, names the unplannable", () => {
    const r = recordedPlan(
      [
        line(),
        line({ qualname: "again" }), // the same hash: the first is kept
        line({ hash: hex("c"), fnKey: "short" }),
        null,
        "text",
        line({ hash: hex("d"), unplannable: "a value of type Tensor" }),
      ],
      [],
      root,
    );
    expect(r.entries.map((e) => e.qualname)).toEqual(["fwd_kernel"]);
    expect(r.unplannable).toEqual(["lib.ops.fwd_kernel: a value of type Tensor"]);
  });

  it("takes the device facts that carry torch's over those that do not, and drops malformed ones", () => {
    const bare = { target: ["cuda", 90, 32] };
    const torch = { ...bare, torch: { name: "NVIDIA H200", capability: [9, 0], count: 1, properties: {} } };
    expect(recordedPlan([], [{ target: "cuda" }, bare, torch], root).device).toEqual(torch);
    expect(recordedPlan([], [bare], root).device).toEqual(bare);
    expect(recordedPlan([], [{ nope: 1 }], root).device).toBeNull();
  });
});

describe("mergedEntries: a key's entries and its parent's", () => {
  it("keeps this job's first, then the parent's it did not record, each cache key once", () => {
    const a = entry({ hash: hex("1") });
    const b = entry({ hash: hex("2") });
    const c = entry({ hash: hex("3"), qualname: "bwd_kernel" });
    const older = entry({ hash: hex("1"), fnKey: hex("f") }); // the same kernel as the parent recorded it
    expect(mergedEntries([a, b], [older, c, c])).toEqual([a, b, c]);
    expect(mergedEntries([], [c, b])).toEqual([c, b]);
    expect(mergedEntries([a], [])).toEqual([a]);
  });
});

describe("stackMismatch: the GPU job's stack against this machine's, but for the accelerator", () => {
  /** A stack's components: TEST_PYTHON with these packages; the GPU's compute capabilities where probed. */
  const stack = (packages: Record<string, string> = TEST_PYTHON.packages, caps?: string[]) =>
    fingerprintFrom(
      { ...TEST_PYTHON, packages },
      {
        models: caps ? ["NVIDIA H200"] : [],
        driver: null,
        vendor: caps ? "nvidia" : null,
        cann: null,
        computeCapabilities: caps,
      },
      {},
    ).components;

  it("is null when only the GPU side has cuda-arch (a CPU runner cannot probe it)", () => {
    const gpu = stack(undefined, ["9.0"]);
    expect(gpu["cuda-arch"]).toBe("9.0");
    expect(stackMismatch(stack(), gpu)).toBeNull();
    expect(stackMismatch(stack(), stack())).toBeNull();
  });

  it("says which part differs when torch does", () => {
    const cpu = stack({ torch: "2.10.0", triton: "3.6.0" });
    expect(stackMismatch(cpu, stack(undefined, ["9.0"]))).toBe(
      "torch is 2.10.0 here, 2.11.0 on the GPU job's machine",
    );
  });

  it("says which part only one side has (other than the accelerator)", () => {
    const noTriton = stack({ torch: "2.11.0" });
    expect(stackMismatch(noTriton, stack())).toBe("triton=3.6.0 on the GPU job's machine, absent here");
    expect(stackMismatch(stack(), noTriton)).toBe("triton=3.6.0 here, absent on the GPU job's machine");
  });
});
