import { describe } from "vitest";
import { localStore } from "../../src/store/local.js";
import { tempDir } from "../helpers/sandbox.js";
import { type Backend, storeConformance } from "./conformance.js";

describe("local store conformance", () => {
  storeConformance(
    (): Backend => ({
      store: localStore(tempDir("local-store")),
      fullListing: true,
      listTickMs: 20,
    }),
    { atomicCreate: true, canDelete: true, objectFaults: true },
  );
});
