import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { ghaStore } from "../../src/store/gha.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { type Backend, storeConformance } from "./conformance.js";

let server: GhaCacheServer;
let dir: string;
beforeAll(async () => {
  server = await startGhaCacheServer();
  Object.assign(process.env, server.env);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-gha-"));
});
afterAll(async () => {
  await server?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("GitHub cache store conformance, against the v2 cache protocol on Azurite (the real @azure/storage-blob)", () => {
  storeConformance(
    (): Backend => ({
      store: ghaStore({ timeoutMs: 60_000, env: { ...process.env, ...server.env } }),
      fullListing: false,
      listTickMs: 20,
      tamper: (object, data) => server.tamper(object, data),
    }),
    { atomicCreate: true, canDelete: false },
  );
});
