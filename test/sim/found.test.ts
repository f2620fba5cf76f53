import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FOUND, FOUND_ON_S3 } from "./found.js";
import { type S3Sim, startS3Sim } from "./s3-world.js";
import { localStore, replay } from "./simulation.js";

/* Each sequence the simulation found while it was built (found.ts), replayed: every invariant holds now. */
let s3: S3Sim | undefined;
beforeAll(async () => {
  s3 = await startS3Sim();
});
afterAll(async () => {
  await s3?.stop();
});

describe("what the simulation found, replayed", () => {
  it.each(FOUND)("%s: every invariant holds", async (_what, steps) => {
    expect(await replay(steps, localStore())).toEqual([]);
  });
  it.each(FOUND_ON_S3)("on S3, %s: every invariant holds", async (_what, steps) => {
    expect(await replay(steps, (s3 as S3Sim).spec())).toEqual([]);
  });
});
