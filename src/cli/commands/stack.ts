import { Strictness } from "../../cache/faults.js";
import { hostEnvironment } from "../../environment.js";
import { reportStack } from "../../job/build-context.js";
import { canonicalForm, probeStack } from "../../stack/fingerprint.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

/** `kcache stack`: the key parts (which make the stack id) and the informational parts, marked. */
export async function stackCommand(o: GlobalOptions) {
  const { config, log } = await commandBasics(o);
  const t0 = performance.now();
  const fp = await probeStack({
    python: config.stack.python,
    pins: config.stack.pins,
    env: hostEnvironment(),
  });
  const ms = performance.now() - t0;
  reportStack(config, fp, log, Strictness.parse(o.strict));
  if (o.json) {
    printJson({
      stackId: fp.stackId,
      components: fp.components,
      info: fp.info,
      mismatches: fp.mismatches,
      errors: fp.errors,
      probeMs: Math.round(ms),
    });
    return;
  }
  const width = Math.max(0, ...[...Object.keys(fp.components), ...Object.keys(fp.info)].map((k) => k.length));
  const lines = [
    `stack ${fp.stackId} (from the key parts)`,
    ...Object.entries(fp.components).map(([k, v]) => `  key   ${k.padEnd(width)}  ${v}`),
    ...Object.entries(fp.info).map(([k, v]) => `  info  ${k.padEnd(width)}  ${v}`),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  log.debug(`probed in ${ms.toFixed(0)} ms; canonical form:\n${canonicalForm(fp.components)}`);
}
