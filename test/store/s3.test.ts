import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_S3, s3Store } from "../../src/store/s3.js";
import { conditionalProxy } from "../helpers/conditional-proxy.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { type Backend, storeConformance } from "./conformance.js";

let server: S3Server;
let proxy: Awaited<ReturnType<typeof conditionalProxy>>;
let n = 0;
beforeAll(async () => {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  server = await startS3rver();
  proxy = await conditionalProxy(server.endpoint);
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe("S3 store conformance, against s3rver (a real S3-compatible server process on 127.0.0.1)", () => {
  storeConformance(
    (): Backend => ({
      // Each test gets its own prefix in the bucket, as separate teams would.
      store: s3Store({
        ...DEFAULT_S3,
        bucket: server.bucket,
        prefix: `test-${++n}/`,
        region: "us-east-1",
        endpoint: server.endpoint,
        forcePathStyle: true,
      }),
      fullListing: true,
      listTickMs: 1100,
    }),
    { atomicCreate: false, canDelete: true, objectFaults: true },
  );
});

describe("S3 store conformance with conditional writes: s3rver behind a loopback proxy that enforces If-None-Match", () => {
  storeConformance(
    (): Backend => ({
      // conditional-writes: auto, so the probe must find that this server honours the header.
      store: s3Store({
        ...DEFAULT_S3,
        bucket: server.bucket,
        prefix: `cond-${++n}/`,
        region: "us-east-1",
        endpoint: proxy.endpoint,
        forcePathStyle: true,
      }),
      fullListing: true,
      listTickMs: 1100,
    }),
    { atomicCreate: true, canDelete: true },
  );
  it("ran the conditional path: the proxy answered 412 to creators that lost", () => {
    expect(proxy.refused()).toBeGreaterThan(0);
  });
});
