import { restoreOrder } from "../../keys/key.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

export async function keyCommand(o: GlobalOptions) {
  const { ctx } = await commandJob(o);
  const order = restoreOrder(ctx.key, ctx.stackKeyPrefix, ctx.restorePrefixes, ctx.scopes.read);
  if (o.json) {
    printJson({
      key: ctx.key,
      stackId: ctx.stack.stackId,
      revision: ctx.revision,
      writeScope: ctx.scopes.write,
      readScopes: ctx.scopes.read,
      restoreOrder: order,
    });
    return;
  }
  process.stdout.write(`${ctx.key}\n`);
  process.stderr.write(
    `saves into scope ${ctx.scopes.write}; restores from:\n${order.map((s, i) => `  ${i + 1}. ${s.scope}: ${s.match} ${s.value}`).join("\n")}\n`,
  );
}
