import type { CacheKind, CacheKindName } from "../../kinds/kind.js";
import type { PickleInterpreter } from "../../kinds/pickle-rewriter.js";
import type { PackReadResult, PromisedPack, RestoreTarget, WantedEntry } from "../pack-request.js";
import type { BuildInput, BuiltPack } from "../write/pack-builder.js";

/** A restore target as plain data (kinds are named, not passed). */
export interface TargetData {
  cache: string;
  kind: CacheKindName;
  root: string;
  staging: string;
}

/** Messages from the main thread to a pack worker. */
export type JobMessage =
  | {
      op: "restore";
      job: number;
      pack: PromisedPack;
      wanted: WantedEntry[];
      targets: TargetData[];
      /** The Zstandard engine asked for ("" for the best that works). */
      zstd: string;
      /** A local store's file for the pack, read by the worker; null: the main thread forwards chunks. */
      file: string | null;
      /** The interpreter that rewrites torch.compile's pickles (pickle-rewriter.ts). */
      python: PickleInterpreter;
    }
  | { op: "chunk"; job: number; data: Uint8Array }
  | { op: "end"; job: number }
  | { op: "fail"; job: number; message: string }
  | {
      op: "build";
      job: number;
      inputs: BuildInput[];
      level: number;
      zstdThreads: number;
      zstd: string;
      python: PickleInterpreter;
      /** Each entry in zstd frames of its own (buildPack's frames). */
      frames: boolean;
    }
  | { op: "ack"; job: number; n: number }
  | { op: "cancel"; job: number };

/** Messages from a pack worker to the main thread. */
export type ToMain =
  | { op: "ack"; job: number; n: number }
  | { op: "bytes"; job: number; n: number }
  | { op: "restored"; job: number; result: PackReadResult }
  | { op: "packed"; job: number; data: Uint8Array }
  | { op: "built"; job: number; result: BuiltPack }
  | { op: "failed"; job: number; message: string };

export function targetData(targets: Map<string, RestoreTarget>): TargetData[] {
  return [...targets].map(([cache, t]) => ({ cache, kind: t.kind.kind, root: t.root, staging: t.staging }));
}

export function targetsFrom(
  data: TargetData[],
  kindOf: (k: CacheKindName) => CacheKind,
): Map<string, RestoreTarget> {
  return new Map(data.map((t) => [t.cache, { kind: kindOf(t.kind), root: t.root, staging: t.staging }]));
}
