import { runAction } from "./action.js";

await runAction();
// The step is done: a transfer given up on (a hung upload to a stalled store) must not keep the job
// waiting. Output is flushed first.
process.stdout.write("", () => process.stderr.write("", () => process.exit()));
