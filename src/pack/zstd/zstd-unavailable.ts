import { StoreError } from "../../errors.js";

/**
 * No Zstandard engine works here: restores miss and saves skip (a store fault: exit 3 under --strict).
 * Its own module, so code that only classifies faults (cache/faults.ts) does not load the engines.
 */
export class ZstdUnavailableError extends StoreError {}
