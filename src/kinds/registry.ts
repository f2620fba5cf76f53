import fs from "node:fs";
import { dirKind } from "./dir.js";
import { inductorKind, looksLikeInductorCache } from "./inductor.js";
import { type CacheFolder, type CacheKind, type CacheKindName, KCACHE_PRIVATE_PREFIX } from "./kind.js";
import { looksLikeTritonCache, tritonKind } from "./triton.js";

const KINDS: Record<CacheKindName, CacheKind> = { triton: tritonKind, inductor: inductorKind, dir: dirKind };

/** The cache kind for a configured `kind:` value. */
export function cacheKind(kind: CacheKindName): CacheKind {
  return KINDS[kind];
}

/**
 * The kind a folder's layout shows: `inductor` when it holds torch.compile's graph caches (or a
 * `triton/` folder beside generated modules), `triton` when it looks like Triton's cache, `dir` for anything
 * else with files in it, null when it is missing or empty (nothing to tell by).
 */
export function detectKind(root: string): CacheKindName | null {
  let items: fs.Dirent[];
  try {
    items = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return null;
  }
  const visible = items.filter((d) => !d.name.startsWith(KCACHE_PRIVATE_PREFIX));
  if (visible.length === 0) return null;
  if (looksLikeInductorCache(visible)) return "inductor";
  return looksLikeTritonCache(root, visible) ? "triton" : "dir";
}

/** Whether a cache folder can hold Triton kernels whose compiles telemetry counts: a Triton cache, or one detected later. */
export function mayHoldKernels(folder: CacheFolder): boolean {
  return folder.kind === "triton" || folder.kind === "auto";
}
