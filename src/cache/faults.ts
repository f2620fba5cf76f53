import { IntegrityError, KcacheError, StoreError, UsageError } from "../errors.js";
import { ZstdUnavailableError } from "../pack/zstd/zstd-unavailable.js";
import { StalledError } from "../store/idle-timeout.js";

/**
 * Faults a restore or save meets, each with a stable code (node-tar's coded warnings are the model):
 * a caller tells a full disk from a bad digest by its code, and `--strict` may name the codes it turns
 * into errors (exit 3; the stack's, exit 4). docs/cli.md lists them; a test holds it to this table.
 */
export const FAULT_CODES = {
  "store-unavailable": "the store could not be reached, refused a request or answered with an error",
  "store-stalled": "a store call or transfer made no progress within the idle timeout",
  "manifest-damaged": "a manifest failed its integrity line, lists an entry twice or names another key",
  "pack-unreadable": "a pack could not be read to its end: missing, truncated, damaged or oversized",
  "entry-bad": "an entry failed verification or was missing from its pack, and was not written",
  "member-refused": "a pack member was refused as unsafe: a link, a device, a path leaving its cache",
  "entry-not-relocatable":
    "an entry names its cache folder and could not be rewritten for another (torch.compile's pickles with no Python to rewrite them, or one that cannot be rewritten exactly): not saved, or not written",
  "plan-refused":
    "a compile plan was damaged or named a file outside the checkout: refused whole, nothing compiled from it",
  "packs-pruned": "packs a save reused were pruned while it ran: the key was withdrawn and saved again",
  "disk-failed": "the local disk failed: full, read-only or unreadable (ENOSPC, EROFS, EIO)",
  "zstd-unavailable": "no Zstandard engine works on this machine",
  "stack-incomplete": "the stack probe could not find a key part (torch or triton, CANN on Ascend)",
  "stack-mismatch": "the probed stack disagrees with stack.pins",
  unexpected: "an unexpected error (a bug in kcache; --verbose prints its stack)",
} as const;

export type FaultCode = keyof typeof FAULT_CODES;

export interface Fault {
  code: FaultCode;
  message: string;
}

export const fault = (code: FaultCode, message: string): Fault => ({ code, message });

/** Which faults fail the command (`--strict`: all of them; `--strict=entry-bad,disk-failed`: those). */
export class Strictness {
  private constructor(private readonly codes: ReadonlySet<FaultCode> | "all" | "none") {}

  static readonly none = new Strictness("none");
  static readonly all = new Strictness("all");

  /**
   * `--strict` as given: true or "" (every fault), false or undefined (none), or a comma-separated
   * list of codes. UsageError naming `source` and the codes for anything else.
   */
  static parse(value: boolean | string | undefined, source = "--strict"): Strictness {
    if (value === undefined || value === false) return Strictness.none;
    if (value === true || value === "" || /^true$/i.test(value)) return Strictness.all;
    if (/^false$/i.test(value)) return Strictness.none;
    const codes = value
      .split(",")
      .map((c) => c.trim())
      .filter(Boolean);
    const unknown = codes.filter((c) => !(c in FAULT_CODES));
    if (unknown.length || codes.length === 0)
      throw new UsageError(
        `${source} ${value}: ${unknown.length ? `no fault is called ${unknown.join(", ")}` : "no codes given"}; give true, false or codes from: ${Object.keys(FAULT_CODES).join(", ")} (docs/cli.md#faults)`,
      );
    return new Strictness(new Set(codes as FaultCode[]));
  }

  /** Whether a fault with this code fails the command. */
  fails(code: FaultCode): boolean {
    return this.codes === "all" || (this.codes !== "none" && this.codes.has(code));
  }
}

/** A fault `--strict` turned into an error: exit 3, its code kept for the caller. */
export class StrictFaultError extends IntegrityError {
  constructor(
    message: string,
    readonly fault: Fault,
  ) {
    super(message);
  }
}

/** Errors of the filesystem or of a stream (ENOSPC, EIO, EMFILE, a premature close), as opposed to bugs. */
export function isIoFault(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && (/^E[A-Z]+$/.test(code) || code.startsWith("ERR_STREAM_"));
}

/** The fault an error thrown by a restore or save stands for. */
export function faultOf(e: unknown): Fault {
  const message = (e as Error)?.message ?? String(e);
  if (e instanceof StrictFaultError) return e.fault;
  if (e instanceof ZstdUnavailableError) return fault("zstd-unavailable", message);
  if (e instanceof StalledError) return fault("store-stalled", message);
  if (e instanceof StoreError)
    return fault(isIoFault(e.cause) ? "disk-failed" : "store-unavailable", message);
  if (e instanceof IntegrityError) return fault("manifest-damaged", message);
  if (!(e instanceof KcacheError) && isIoFault(e)) return fault("disk-failed", message);
  return fault("unexpected", message);
}

/** Whether a message carries an errno of the local disk (Node's "ENOSPC: no space left on device, write"). */
export function diskFaultIn(message: string): boolean {
  return /\bE(NOSPC|DQUOT|ROFS|IO)\b/.test(message);
}
