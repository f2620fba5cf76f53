import type { ChildProcessWithoutNullStreams } from "node:child_process";

/** A child's stdout and stderr collected as text while it runs. */
export function childOutput(child: ChildProcessWithoutNullStreams): { stdout: string; stderr: string } {
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => {
    out.stdout += d;
  });
  child.stderr.on("data", (d) => {
    out.stderr += d;
  });
  return out;
}
