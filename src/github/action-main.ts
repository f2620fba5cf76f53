import { LOOKUP_DAEMON_ENV } from "../cache/lazy/lookup-daemon.js";
import { holdYoungGeneration } from "../process/young-generation.js";
import { runAction, runLookupDaemon } from "./action.js";

holdYoungGeneration();

// Started by the restore step to serve the job's lookups until the save step (action-lookups.ts).
const daemon = process.env[LOOKUP_DAEMON_ENV];
if (daemon !== undefined) await runLookupDaemon(Number(daemon) || 0);
else await actionStep();

async function actionStep(): Promise<void> {
  let finished = false;
  // Node ends a step whose work never settled (a stream that neither ended nor failed) with exit 13 and
  // no word of why: a lost save, a failed job. The cache never breaks the build: say so, and go on.
  process.on("beforeExit", () => {
    if (finished) return;
    finished = true;
    process.stdout.write(
      "::warning title=kcache::kcache stopped before it finished: a store transfer or file read neither ended nor failed; nothing more was restored or saved\n",
    );
    process.exit(0);
  });
  await runAction();
  finished = true;
  // The step is done: a transfer given up on (a hung upload to a stalled store) must not keep the job
  // waiting. Output is flushed first.
  process.stdout.write("", () => process.stderr.write("", () => process.exit()));
}
