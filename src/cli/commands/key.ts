import { restoreOrder } from "../../keys/key.js";
import { describeIdentity } from "../../keys/scope.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

/** `kcache key`: the key, the scopes, the restore order, and which CI said what this build is. */
export async function keyCommand(o: GlobalOptions) {
  const { ctx } = await commandJob(o);
  const order = restoreOrder(ctx.key, ctx.stackKeyPrefix, ctx.restorePrefixes, ctx.scopes.read);
  const identity = ctx.scopes.identity;
  if (o.json) {
    printJson({
      key: ctx.key,
      stackId: ctx.stack.stackId,
      revision: ctx.revision,
      writeScope: ctx.scopes.write,
      readScopes: ctx.scopes.read,
      trusted: ctx.scopes.unplaced === null,
      declared: ctx.scopes.declared,
      build: {
        system: identity.system,
        is: identity.ref,
        facts: identity.facts,
        defaultBranch: ctx.scopes.defaultBranch,
        event: identity.event,
      },
      restoreOrder: order,
    });
    return;
  }
  process.stdout.write(`${ctx.key}\n`);
  const facts = Object.entries(identity.facts).map(([k, v]) => `${k}=${v}`);
  process.stderr.write(
    `build: ${describeIdentity(identity)}${facts.length ? ` (from ${facts.join(", ")})` : ""}${ctx.scopes.declared ? "; scope declared" : ""}\n` +
      `saves into scope ${ctx.scopes.write}; restores from:\n${order.map((s, i) => `  ${i + 1}. ${s.scope}: ${s.match} ${s.value}`).join("\n")}\n`,
  );
}
