import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import type { RestoreTarget } from "../pack-request.js";
import type { TarMember } from "./tar-reader.js";

export interface LocatedMember {
  cache: string;
  entryName: string;
  /** The file's path inside its entry ("" for a file-shaped entry). */
  rel: string;
  target: RestoreTarget;
}

const REGULAR = new Set(["File", "OldFile", "ContiguousFile"]);

/**
 * Which entry and file a pack member is, or why it is refused: only regular files whose path is
 * `<cache>/<entry>[/<file>]` for a configured cache and a well-formed entry name; never links,
 * devices, absolute paths or paths with empty, '.' or '..' parts.
 */
export function locateMember(member: TarMember, targets: Map<string, RestoreTarget>): LocatedMember | string {
  if (!REGULAR.has(member.type)) return `${member.type} members are never extracted`;
  const p = member.path;
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) return "absolute path";
  const parts = p.split("/");
  if (parts.some((s) => s === "" || s === "." || s === ".." || s.includes("\\") || s.includes("\0"))) {
    return "path with empty, '.' or '..' parts";
  }
  const [cache, ...rest] = parts;
  const target = targets.get(cache ?? "");
  if (!target) return "not a configured cache";
  let entryName: string;
  let rel: string;
  if (target.kind.entryShape === "folder") {
    if (rest.length !== 2) return "not <cache>/<entry>/<file>";
    entryName = rest[0] as string;
    rel = rest[1] as string;
  } else {
    entryName = rest.join("/");
    rel = "";
  }
  if (!target.kind.isEntryName(entryName) || entryName.startsWith(KCACHE_PRIVATE_PREFIX))
    return "bad entry name";
  return { cache: cache as string, entryName, rel, target };
}
