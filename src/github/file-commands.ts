import fs from "node:fs";
import { createLog } from "../log.js";

/**
 * Appends to one of the runner's file commands ($GITHUB_OUTPUT, $GITHUB_ENV, $GITHUB_STEP_SUMMARY):
 * only to a regular file, opened without blocking (a FIFO no one reads is never waited on). What
 * cannot be written (a full disk, not a file) is a warning and the step goes on: false.
 */
export function appendFileCommand(file: string, text: string, what: string): boolean {
  let fd: number | undefined;
  try {
    const { O_WRONLY, O_APPEND, O_CREAT, O_NONBLOCK } = fs.constants;
    fd = fs.openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK, 0o644);
    if (!fs.fstatSync(fd).isFile()) throw new Error("not a regular file");
    fs.writeFileSync(fd, text);
    return true;
  } catch (e) {
    createLog().warn(
      `${what} could not be written to ${file} (${(e as Error).message}); the step goes on without`,
    );
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
