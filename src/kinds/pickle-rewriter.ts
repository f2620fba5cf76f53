import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ExitCode, KcacheError } from "../errors.js";
import { MARK, namesAny, ROOT_PLACEHOLDER } from "./root-placeholder.js";

/**
 * Runs python/kcache_pickle/rewrite.py on one pickled torch.compile cache entry. The interpreter is
 * the one the stack names (`stack.python`, as the stack probe runs it), set once per command by
 * `usePickleInterpreter`; never a guess. Where it cannot rewrite (no such interpreter, a pickle it
 * cannot rewrite exactly), the entry is not stored or placed: `RelocationError`.
 */
export interface PickleInterpreter {
  python: string;
  /** Where it was named, for the warning's fix. */
  source: string;
}

let current: PickleInterpreter | (() => PickleInterpreter) = {
  python: "python3",
  source: "stack.python (default python3)",
};

/**
 * Sets the interpreter, or how to find it: found at the first rewrite, so that a command that
 * rewrites none (`kcache key`) never looks it up.
 */
export function usePickleInterpreter(i: PickleInterpreter | (() => PickleInterpreter)): void {
  current = i;
}

/** The interpreter set for this command (pack workers are given it with each job). */
export function pickleInterpreter(): PickleInterpreter {
  if (typeof current === "function") current = current();
  return current;
}

/** An entry names its cache folder and could not be relocated: it is neither stored nor placed. */
export class RelocationError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_RELOCATION", ExitCode.store);
  }
}

/** How a restore's reason for an entry not written says it could not be relocated (restore-outcomes.ts). */
export const NOT_RELOCATABLE = "not relocatable: ";

let script: string | undefined;
/** python/kcache_pickle/rewrite.py, shipped beside the hook in the package and the action. */
function rewriterScript(): string {
  if (script) return script;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "python", "kcache_pickle", "rewrite.py");
    if (fs.existsSync(candidate)) {
      script = candidate;
      return candidate;
    }
    const up = path.dirname(dir);
    if (up === dir)
      throw new RelocationError("kcache's python/kcache_pickle/rewrite.py is missing from the installation");
    dir = up;
  }
}

/**
 * The most a rewrite can output: every match (at least `shortestMatch` bytes) replaced by the longest
 * replacement, and every value's length field grown to 8 bytes (a value takes at least 2 bytes).
 */
function outputBound(size: number, shortestMatch: number, longestReplacement: number): number {
  return Math.ceil((size * longestReplacement) / Math.max(1, shortestMatch)) + size * 4 + (1 << 20);
}

/**
 * Runs the rewriter with `out` as its output file and returns that file's size. The output never
 * passes through Node: through a pipe it would be held twice (its chunks, then their join).
 */
function rewriteInto(data: Buffer, args: [string, ...string[]], out: string, bound: number): number {
  try {
    execFileSync(pickleInterpreter().python, [rewriterScript(), args[0], "--out", out, ...args.slice(1)], {
      input: data,
      // Linear in the pickle's size (seconds for 64 MB): minutes mean something is wrong.
      timeout: 300_000,
      stdio: ["pipe", "ignore", "pipe"],
    });
  } catch (e) {
    throw rewriterFailure(e);
  }
  const size = fs.statSync(out).size;
  if (size > bound) throw new RelocationError(`the rewrite gave ${size} bytes, more than it can (${bound})`);
  return size;
}

/** Why the rewriter process failed, as the entry's reason. */
function rewriterFailure(e: unknown): RelocationError {
  const err = e as NodeJS.ErrnoException & { status?: number; stderr?: Buffer | string };
  const { python, source } = pickleInterpreter();
  if (err.code === "ENOENT" && err.path === python)
    return new RelocationError(
      `no Python interpreter "${python}" to rewrite torch.compile's pickled entries (${source}): install Python 3 or set stack.python in kcache.yml to the job's interpreter`,
    );
  const said = err.stderr?.toString().trim().split("\n").pop();
  return new RelocationError(
    err.status === 3
      ? `${said ?? "not a pickle kcache can rewrite"}`
      : `the pickle rewriter (${python}) failed: ${said || err.message}`,
  );
}

/** What `rewriteInto` wrote, read back: for callers that need the bytes. */
function rewritten(data: Buffer, args: [string, ...string[]], bound: number): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-rewrite-"));
  try {
    const out = path.join(dir, "out");
    rewriteInto(data, args, out, bound);
    return fs.readFileSync(out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A rewrite of one pickle: the rewriter's arguments and the most it may write. */
export interface PickleRewrite {
  args: [string, ...string[]];
  bound: number;
}

/**
 * How a pickle is normalized (by normalizePickle, or by runRewrites with others): null when it names
 * none of `roots` (kept as it is).
 */
export function pickleNormalization(data: Buffer, roots: string[]): PickleRewrite | null {
  if (!namesAny(data, [...roots, MARK])) return null;
  if (data[0] !== 0x80) throw new RelocationError("names its cache folder but is not a pickle (protocol 2+)");
  const shortest = Math.min(MARK.length, ...roots.map((r) => Buffer.byteLength(r)));
  return {
    args: ["normalize", ...roots],
    bound: outputBound(data.length, shortest, ROOT_PLACEHOLDER.length),
  };
}

/**
 * How a stored pickle is relocated to `root` (by relocatePickle, or by runRewrites with others): null
 * when it holds no placeholder (placed as it is).
 */
export function pickleRelocation(data: Buffer, root: string): PickleRewrite | null {
  if (!data.includes(MARK)) return null;
  if (data[0] !== 0x80)
    throw new RelocationError("holds kcache's placeholder but is not a pickle (protocol 2+)");
  const longest = Math.max(MARK.length, Buffer.byteLength(root));
  return {
    args: ["relocate", root],
    bound: outputBound(data.length, "@@KCACHE_INDUCTOR_LITERAL@@".length, longest),
  };
}

/** The pickle with each of `roots` replaced by the placeholder (see rewrite.py); as it is when it names none. */
export function normalizePickle(data: Buffer, roots: string[]): Buffer {
  const how = pickleNormalization(data, roots);
  return how ? rewritten(data, how.args, how.bound) : data;
}

/** The stored pickle with `root` in place of the placeholder; as it is when it holds none. */
export function relocatePickle(data: Buffer, root: string): Buffer {
  const how = pickleRelocation(data, root);
  return how ? rewritten(data, how.args, how.bound) : data;
}

/** normalizePickle written to the file `out` (its size), or null when the pickle is stored as it is. */
export function normalizePickleInto(data: Buffer, roots: string[], out: string): number | null {
  const how = pickleNormalization(data, roots);
  return how ? rewriteInto(data, how.args, out, how.bound) : null;
}

/** A batch of rewrites: each reads its stored pickle from the file `input` and writes the rewritten one to `out`. */
export type RewriteJob = PickleRewrite & { input: string; out: string };

/** How `rewrite.py batch` is run for `jobs`: its arguments, what it reads on stdin, and its limits. */
function batchRequest(jobs: RewriteJob[]) {
  const lines = jobs.map((j) =>
    JSON.stringify({ mode: j.args[0], roots: j.args.slice(1), in: j.input, out: j.out }),
  );
  return {
    args: [rewriterScript(), "batch"],
    input: `${lines.join("\n")}\n`,
    // Linear in the pickles' size (seconds for 64 MB each): minutes mean something is wrong.
    timeout: 300_000 + 10_000 * jobs.length,
    maxBuffer: 1024 * jobs.length + (1 << 20),
  };
}

/** Per job of a batch, from the rewriter's output: the size written, or why it could not be. */
function batchResults(jobs: RewriteJob[], stdout: string): (number | RelocationError)[] {
  const results = stdout.split("\n").filter(Boolean);
  return jobs.map((j, i) => {
    let r: { size?: number; error?: string };
    try {
      r = JSON.parse(results[i] ?? "{}");
    } catch {
      r = {};
    }
    if (typeof r.size !== "number")
      return new RelocationError(
        r.error ?? `the pickle rewriter (${pickleInterpreter().python}) gave no result`,
      );
    if (r.size > j.bound)
      return new RelocationError(`the rewrite gave ${r.size} bytes, more than it can (${j.bound})`);
    return r.size;
  });
}

/**
 * Runs many rewrites in one Python process (`rewrite.py batch`). A restore's pickles each started a
 * process of their own before, tens of milliseconds each. Per job: the size written, or why it could
 * not be (RelocationError); the process failing as a whole fails every job with its reason.
 */
export function runRewrites(jobs: RewriteJob[]): (number | RelocationError)[] {
  if (jobs.length === 0) return [];
  const { args, ...opts } = batchRequest(jobs);
  let stdout: string;
  try {
    stdout = execFileSync(pickleInterpreter().python, args, {
      ...opts,
      stdio: ["pipe", "pipe", "pipe"],
      encoding: "utf8",
    });
  } catch (e) {
    const err = rewriterFailure(e);
    return jobs.map(() => err);
  }
  return batchResults(jobs, stdout);
}

/**
 * runRewrites in the background: the interpreter starts and rewrites while this thread goes on with
 * other packs (its ~90 ms for a torch.compile cache's 23 MB graph pickle were a stall before).
 */
export function runRewritesInBackground(jobs: RewriteJob[]): Promise<(number | RelocationError)[]> {
  if (jobs.length === 0) return Promise.resolve([]);
  const { args, input, ...opts } = batchRequest(jobs);
  return new Promise((resolve) => {
    const child = execFile(
      pickleInterpreter().python,
      args,
      { ...opts, encoding: "utf8" },
      (e, stdout, stderr) => {
        if (!e) return resolve(batchResults(jobs, stdout));
        // As execFileSync reports it: the exit status apart from a failure to start (ENOENT).
        const code = (e as NodeJS.ErrnoException).code;
        const status = typeof code === "number" ? code : undefined;
        const err = rewriterFailure(Object.assign(e, { status, stderr }));
        resolve(jobs.map(() => err));
      },
    );
    // A rewriter that dies early closes its stdin: its exit says why, not the broken pipe.
    child.stdin?.on("error", () => {});
    child.stdin?.end(input);
  });
}
