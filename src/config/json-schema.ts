import * as z from "zod";
import { configSchema } from "./schema.js";

/** Where editors fetch it: this repository's copy at the action's moving tag (docs/releasing.md). */
export const CONFIG_SCHEMA_URL =
  "https://raw.githubusercontent.com/kcache/kcache/v0/schema/kcache.schema.json";

/**
 * kcache.yml's JSON Schema as schema/kcache.schema.json holds it (`npm run schema` writes it; a test
 * holds the file to this): made from the very schema the loader validates with, on its input side
 * (what a file may say, before defaults are filled in), for draft-07, which editors' YAML support
 * reads. What the loader checks in code (a cron, a time zone, a profile naming a cache there is) an
 * editor cannot: kcache still says those when it loads the file.
 */
export function configJsonSchemaText(): string {
  const { $schema, ...schema } = z.toJSONSchema(configSchema, { io: "input", target: "draft-7" });
  const described = {
    $schema,
    $id: CONFIG_SCHEMA_URL,
    title: "kcache.yml",
    description:
      "kcache's configuration: caches, store, key, save, stack and profiles (docs/configuration.md)",
    ...schema,
  };
  return `${JSON.stringify(described, null, 2)}\n`;
}
