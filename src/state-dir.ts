import os from "node:os";
import path from "node:path";

/** $KCACHE_STATE_DIR, else $RUNNER_TEMP/kcache-state on GitHub runners, else ~/.cache/kcache-state. */
export function stateDir(env: NodeJS.ProcessEnv): string {
  if (env.KCACHE_STATE_DIR) return env.KCACHE_STATE_DIR;
  if (env.RUNNER_TEMP) return path.join(env.RUNNER_TEMP, "kcache-state");
  return path.join(env.HOME || os.homedir(), ".cache", "kcache-state");
}
