import path from "node:path";
import { describe, expect, it } from "vitest";
import { settleFolders } from "../../../src/cache/persistent/settle.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { runSimWorkload } from "../../helpers/python-sim.js";
import {
  defaultBranchKey,
  hooked,
  jobOn,
  PR_ENV,
  persistentFolder,
  sorted,
} from "../../helpers/runner-jobs.js";
import { sandbox } from "../../helpers/sandbox.js";

/*
 * Two jobs of different scopes at once on one runner, under one user and one state folder (a
 * runner's KCACHE_STATE_DIR, outside GitHub's per-job RUNNER_TEMP): the record a default-branch
 * job's restore leaves, which its save attributes entries by, is its own whatever a pull request's
 * job restores and saves in between. Were the pull request's restore to replace it, the default
 * branch's save would find no record of its own: on a runner GitHub says keeps its folders it would
 * leave out what its job compiled (compiled again by every later job), and on one nothing says so
 * it would take the pull request's kernels into the default branch's key.
 */
describe("two jobs of different scopes, one state folder", () => {
  it.each([
    ["a self-hosted runner GitHub says keeps its folders", { RUNNER_ENVIRONMENT: "self-hosted" }],
    ["a runner nothing says keeps its folders (another CI's, a script's)", {}],
  ])(
    "on %s, a pull request's whole job between the default branch's restore and save: the default branch's key holds what its own job compiled, none of the pull request's",
    async (_, runner) => {
      const sb = sandbox();
      const { folder, earlier } = await persistentFolder(sb);
      const stateDir = path.join(sb.dir, "runner-state");
      const main = await jobOn(sb, folder, { rev: "1", env: runner, stateDir });
      await restore(main);
      const pr = await jobOn(sb, folder, { rev: "2", env: { ...PR_ENV, ...runner }, stateDir });
      await restore(pr);
      const planted = runSimWorkload(folder, { plain: 3, autotuned: 1, prefix: "planted" });
      await save(pr);
      await settleFolders(pr, { passed: true });
      const mine = hooked(folder, { plain: 2, autotuned: 1, prefix: "mine" });

      const s = await save(main, { hook: mine.hook });
      const inKey = await defaultBranchKey(sb);
      for (const e of planted.written) expect(inKey).not.toContain(e);
      expect(inKey).toEqual(sorted(earlier, mine.run.written));
      expect(s.entriesNew).toBe(mine.run.written.length);
    },
  );
});
