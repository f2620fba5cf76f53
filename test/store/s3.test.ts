import { afterAll, beforeAll, describe } from "vitest";
import { DEFAULT_S3, s3Store } from "../../src/store/s3.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { type Backend, storeConformance } from "./conformance.js";

let server: S3Server;
let n = 0;
beforeAll(async () => {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  server = await startS3rver();
});
afterAll(async () => {
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
      atomicCreate: false,
      fullListing: true,
      listTickMs: 1100,
    }),
  );
});
