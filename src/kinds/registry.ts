import { dirKind } from "./dir.js";
import type { CacheKind, CacheKindName } from "./kind.js";
import { tritonKind } from "./triton.js";

const KINDS: Record<CacheKindName, CacheKind> = { triton: tritonKind, dir: dirKind };

/** The cache kind for a configured `kind:` value. */
export function cacheKind(kind: CacheKindName): CacheKind {
  return KINDS[kind];
}
