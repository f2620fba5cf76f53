import { type ChildProcess, spawn } from "node:child_process";

/**
 * A job's command runs in a process group of its own (so a timeout ends all it started), which also
 * keeps a signal to kcache's own group from reaching it. Node has no parent-death signal, so were kcache
 * killed outright (kill -9, the OOM killer) the command would run on with no one waiting for it. The
 * watchdog is a shell of its own group that reads a pipe only kcache holds open: when kcache ends by any
 * means the pipe closes, and the watchdog sends the command's group SIGTERM, then SIGKILL after 10 s.
 * A command that ends first stops the watchdog (stop) before anything could take the group's id.
 */
export interface GroupWatchdog {
  stop(): void;
}

/**
 * POSIX sh, builtins only until the pipe closes (no program on PATH is needed to wait: a missing `cat`
 * would end the command at once); dash's kill takes `-s SIG --` before a negative group id.
 */
const SCRIPT =
  'while read -r _; do :; done; kill -s TERM -- "-$1" 2>/dev/null || exit 0; sleep 10; kill -s KILL -- "-$1" 2>/dev/null';

export function watchGroup(pgid: number | undefined, shell: string, env: NodeJS.ProcessEnv): GroupWatchdog {
  if (!pgid) return { stop() {} };
  let dog: ChildProcess | null = null;
  try {
    // bash whose standard input is a socket (Node's pipes are socket pairs) takes itself for a remote
    // shell and sources ~/.bashrc first (pyenv's init waited there on a lock): --norc keeps it out.
    const args = shell === "bash" ? ["--norc", "--noprofile", "-c"] : ["-c"];
    dog = spawn(shell, [...args, SCRIPT, "kcache-watchdog", String(pgid)], {
      env: { PATH: env.PATH },
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
    });
    dog.on("error", () => {});
    dog.stdin?.on("error", () => {});
    // Neither the watchdog nor its pipe keeps kcache running: it ends with the command's end.
    dog.unref();
    (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  } catch {
    dog = null;
  }
  return {
    stop() {
      try {
        // Its group: the shell and anything it started.
        if (dog?.pid) process.kill(-dog.pid, "SIGKILL");
      } catch {
        // already gone
      }
    },
  };
}
