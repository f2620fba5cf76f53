import { dirKind } from "./dir.js";
import type { CacheKind } from "./kind.js";
import { tritonKind } from "./triton.js";

/** The cache kind for a configured `kind:` value. */
export function cacheKind(kind: "triton" | "dir"): CacheKind {
  return kind === "triton" ? tritonKind : dirKind;
}
