import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * HEAD's commit and branch and origin/HEAD's branch, read from the repository's files: every kcache
 * command outside GitHub asked git for them, three processes (10-25 ms each) before any work. By hand
 * because no library is needed for three refs (isomorphic-git would add megabytes to start-up); the
 * layout read is git's plain one: `.git` a folder or a `gitdir:` file (worktrees, submodules), a
 * `commondir` for worktrees, loose refs, then packed-refs. Anything else (reftable, a ref that is
 * not there) asks git itself, as before.
 */
export class GitRefs {
  private constructor(
    private readonly gitDir: string,
    private readonly commonDir: string,
  ) {}

  /**
   * The repository holding `cwd`; "none" when no `.git` is above it (not a checkout: git would say
   * nothing either), null when there is one this reader does not read (git does).
   */
  static at(cwd: string): GitRefs | "none" | null {
    for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
      const dotGit = path.join(dir, ".git");
      let gitDir: string | null = null;
      try {
        const st = fs.statSync(dotGit);
        if (st.isDirectory()) gitDir = dotGit;
        else if (st.isFile()) {
          const m = /^gitdir: (.+)$/m.exec(fs.readFileSync(dotGit, "utf8"));
          if (m?.[1]) gitDir = path.resolve(dir, m[1].trim());
        }
      } catch {
        // not here: look further up
      }
      if (gitDir) {
        let common = gitDir;
        try {
          common = path.resolve(gitDir, fs.readFileSync(path.join(gitDir, "commondir"), "utf8").trim());
        } catch {
          // not a linked worktree
        }
        // A reftable repository keeps refs in a binary table: git reads it.
        return fs.existsSync(path.join(common, "reftable")) ? null : new GitRefs(gitDir, common);
      }
      if (path.dirname(dir) === dir) return "none";
    }
  }

  /** What `ref` (HEAD, refs/...) points at: another ref, a commit, or null when it is not there. */
  private read(ref: string): { symbolic: string } | { commit: string } | null {
    const dir = ref === "HEAD" ? this.gitDir : this.commonDir;
    let text: string | null = null;
    try {
      text = fs.readFileSync(path.join(dir, ref), "utf8").trim();
    } catch {
      text = this.packed(ref);
    }
    if (text === null) return null;
    const sym = /^ref: (\S+)$/.exec(text);
    if (sym?.[1]) return { symbolic: sym[1] };
    return /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(text) ? { commit: text } : null;
  }

  private packed(ref: string): string | null {
    try {
      for (const line of fs.readFileSync(path.join(this.commonDir, "packed-refs"), "utf8").split("\n")) {
        const [sha, name] = line.split(" ");
        if (name === ref && sha) return sha;
      }
    } catch {
      // no packed refs
    }
    return null;
  }

  /** HEAD's commit, following its branch; null where the branch has no commit yet. */
  headCommit(): string | null {
    let r = this.read("HEAD");
    for (let hops = 0; r && "symbolic" in r && hops < 5; hops++) r = this.read(r.symbolic);
    return r && "commit" in r ? r.commit : null;
  }

  /** HEAD's branch name; null when HEAD is detached. */
  headBranch(): string | null {
    const r = this.read("HEAD");
    return r && "symbolic" in r && r.symbolic.startsWith("refs/heads/")
      ? r.symbolic.slice("refs/heads/".length)
      : null;
  }

  /** The branch origin/HEAD names (the clone's default branch); null when it names none. */
  originDefault(): string | null {
    const r = this.read("refs/remotes/origin/HEAD");
    return r && "symbolic" in r && r.symbolic.startsWith("refs/remotes/origin/")
      ? r.symbolic.slice("refs/remotes/origin/".length) || null
      : null;
  }
}

/**
 * The answer from the files where they hold one, else from `git <args>`, its output read by
 * `fromGit`; null outside a checkout. `read` answers null only where git should be asked.
 */
export function fromRefs(
  cwd: string,
  read: (refs: GitRefs) => string | null,
  args: string[],
  fromGit: (out: string) => string | null = (out) => out,
): string | null {
  const refs = GitRefs.at(cwd);
  if (refs === "none") return null;
  const answer = refs ? read(refs) : null;
  if (answer !== null) return answer;
  const out = askGit(cwd, args);
  return out === null ? null : fromGit(out);
}

/** `git <args>` in `cwd`, its output trimmed; null when git fails or is missing. */
export function askGit(cwd: string, args: string[]): string | null {
  try {
    return execFileSync("git", args, { cwd, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
  } catch {
    return null;
  }
}
