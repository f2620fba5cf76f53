import type { Tuning } from "../../manifest/manifest.js";
import type { AutotuneSettings } from "./settings.js";

/** Why a job was not given an autotune result it could have had. */
export type WithheldReason =
  | "fresh" // the profile re-tunes from cached binaries
  | "unknown-producer" // in the folder before the job, or saved before kcache recorded producers
  | "not-a-benchmark" // tuned by a profile that is not a benchmark's (a test job's)
  | "other-device" // tuned on another device model
  | "other-env" // tuned with other values of the variables that shape timing
  | "changed-salt"; // a source of the kernel's package changed since it was tuned

export const WITHHELD_REASONS: Record<WithheldReason, string> = {
  fresh: "the profile tunes afresh (autotune: fresh)",
  "unknown-producer": "its producer is unknown (in the folder before the job, or saved by an older kcache)",
  "not-a-benchmark": "it was tuned by a profile that is not a benchmark's",
  "other-device": "it was tuned on another device model",
  "other-env": "it was tuned with other values of autotune-env",
  "changed-salt": "a source of its kernel's package changed since it was tuned",
};

/**
 * Whether a job with `settings` is given an autotune result produced by `tuning` (undefined: unknown),
 * or why not. `saltHolds` says whether the result's salt, if any, still matches the job's sources.
 */
export function autotuneVerdict(
  settings: AutotuneSettings,
  tuning: Tuning | undefined,
  saltHolds: boolean,
): WithheldReason | null {
  if (settings.policy === "fresh") return "fresh";
  if (settings.policy === "pinned") {
    if (!tuning) return "unknown-producer";
    if (!tuning.benchmark) return "not-a-benchmark";
    const mine = settings.producer;
    if (tuning.device !== mine.device) return "other-device";
    const names = new Set([...Object.keys(mine.env), ...Object.keys(tuning.env)]);
    for (const n of names) if (mine.env[n] !== tuning.env[n]) return "other-env";
  }
  // A profile that salts its results is not given one whose sources changed, whatever its policy.
  if (settings.salt !== "none" && !saltHolds) return "changed-salt";
  return null;
}
