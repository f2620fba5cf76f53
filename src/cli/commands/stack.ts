import { performance } from "node:perf_hooks";
import { StackMismatchError } from "../../errors.js";
import { canonicalForm, probeStack } from "../../stack/fingerprint.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

export async function stackCommand(o: GlobalOptions) {
  const { config, log } = commandBasics(o);
  const t0 = performance.now();
  const fp = await probeStack({ python: config.stack.python, pins: config.stack.pins });
  const ms = performance.now() - t0;
  for (const w of fp.warnings) log.warn(w);
  if (fp.mismatches.length) {
    const msg = `${config.source}: stack.pins disagree with this machine: ${fp.mismatches.join("; ")}`;
    if (o.strict) throw new StackMismatchError(msg);
    log.warn(msg);
  }
  if (o.json) {
    printJson({
      stackId: fp.stackId,
      components: fp.components,
      mismatches: fp.mismatches,
      probeMs: Math.round(ms),
    });
    return;
  }
  process.stdout.write(`stack ${fp.stackId}\n${canonicalForm(fp.components)}`);
  log.debug(`probed in ${ms.toFixed(0)} ms`);
}
