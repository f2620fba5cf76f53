/** What one check found, in terms a person acts on. */
export interface CheckResult {
  name: string;
  type: string;
  severity: "error" | "warn";
  passed: boolean;
  /** One line: what passed, or what is wrong and where. */
  message: string;
  /** The file at fault, for annotations. */
  file?: string;
  details?: Record<string, unknown>;
}

/** A problem with a result file itself (missing, not JSON, no records there). */
export class ResultFileError extends Error {}
