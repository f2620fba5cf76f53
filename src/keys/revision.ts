import { UsageError } from "../errors.js";
import { askGit, fromRefs } from "./git-refs.js";

/** The longest revision a key may carry (a sha256 commit is 64 characters). */
export const MAX_REVISION_LENGTH = 100;

/** Throws a usage error naming `source` when a revision cannot be part of a key. */
export function checkRevision(revision: string, source: string): string {
  if (revision === "")
    throw new UsageError(`${source} is empty; pass a commit id, or leave it out to use git HEAD`);
  if (revision.length > MAX_REVISION_LENGTH) {
    throw new UsageError(
      `${source} is ${revision.length} characters; a revision is at most ${MAX_REVISION_LENGTH} (pass the commit id)`,
    );
  }
  if ([...revision].some((ch) => ch === "," || ch.charCodeAt(0) <= 0x20 || ch.charCodeAt(0) === 0x7f)) {
    throw new UsageError(
      `${source} "${revision}" holds a space, comma or control character; pass the commit id`,
    );
  }
  return revision;
}

/** The checkout revision: $GITHUB_SHA, else `git rev-parse HEAD`, else null (not a git checkout). */
export function currentRevision(env: NodeJS.ProcessEnv, cwd: string): string | null {
  if (env.GITHUB_SHA) return env.GITHUB_SHA;
  return fromRefs(cwd, (r) => r.headCommit(), ["rev-parse", "HEAD"]);
}

/** The commit a git name (origin/main, a tag, a sha) stands for in `cwd`, or null when git cannot say. */
export function resolveRevision(name: string, cwd: string): string | null {
  return askGit(cwd, ["rev-parse", "--verify", "--quiet", `${name}^{commit}`]);
}
