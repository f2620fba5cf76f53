import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { liveObjectsIn, liveProject } from "../../helpers/live-project.js";
import { SIM } from "../../helpers/python-sim.js";

const workload = (args: string) => `python3 ${SIM}/workload.py ${args}`;

/** The entry folders of a cache holding a kernel whose name starts with `prefix`, in kernel order. */
function kernelFolders(cache: string, prefix: string): string[] {
  const out: [number, string][] = [];
  for (const d of fs.readdirSync(cache, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    const name = d.name;
    const files = fs.readdirSync(path.join(cache, name));
    const m = files.map((f) => new RegExp(`^${prefix}_fwd_kernel_(\\d+)\\.`).exec(f)).find(Boolean);
    if (m) out.push([Number(m[1]), name]);
  }
  return out.sort((a, b) => a[0] - b[0]).map(([, name]) => name);
}

describe("a broken live object is refused alone; only a failing store is given up on (store.isObjectFault)", () => {
  it("records without their pack, promising more than their pack, over garbage, or not records at all: those kernels compile, every other live and deferred entry is still fetched", async () => {
    const p = liveProject({
      lazy: true,
      profiles: {
        keyed: { commands: [workload("4 0 --prefix keyed")] },
        idle: { commands: ['python3 -c "print(1)"'] },
        share: { commands: [workload("6 0 --prefix shared")], save: "never", prefix: "share-only" },
        both: { commands: [workload("6 0 --prefix shared"), workload("4 0 --prefix keyed")] },
      },
    });
    // A key whose entries a lazy restore leaves in the store (the idle job used none of them).
    await p.run("keyed", "r1", "a");
    await p.run("idle", "r2", "b");
    // Six kernels shared live, and no key holds them.
    const shared = await p.run("share", "r3", "c");
    expect(shared.report.lazy.liveWritten).toBeGreaterThanOrEqual(6);
    const kernels = kernelFolders(path.join(p.dir, "r3", "triton"), "shared");
    expect(kernels).toHaveLength(6);
    const live = liveObjectsIn(p.store);
    const objects = (i: number) => live.get(kernels[i] as string) as { record: string; pack: string };
    // The first kernel looked up has lost its pack (a prune mid-lookup, or killed between its two deletes).
    fs.rmSync(objects(0).pack);
    // The second's record promises more bytes than its pack holds.
    const record = JSON.parse(fs.readFileSync(objects(1).record, "utf8"));
    fs.writeFileSync(objects(1).record, JSON.stringify({ ...record, packBytes: record.packBytes + 4096 }));
    // The third's pack is garbage; the fourth's record is not a record at all.
    fs.writeFileSync(objects(2).pack, Buffer.alloc(fs.statSync(objects(2).pack).size, 0x5a));
    fs.writeFileSync(objects(3).record, "null");

    const both = await p.run("both", "r4", "d");
    expect(both.report.lazy).toMatchObject({ storeDown: null, failed: 4, live: 2 });
    // The keyed workload's entries, looked up after the broken ones, still come from the store.
    expect(both.report.lazy.onDemand).toBeGreaterThanOrEqual(4);
    expect(both.report.kernels.compiled).toBe(4);
    expect(both.stderr).toContain(`${kernels[0]}.tar.zst`);
  });
});
