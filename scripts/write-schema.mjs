#!/usr/bin/env node
// Writes schema/kcache.schema.json from the loader's own schema (src/config/json-schema.ts), as
// `npm run schema` after a change to src/config/; test/config/json-schema.test.ts fails while the
// committed file is stale. Reads the compiled build/src/, which `npm run schema` builds first.
import fs from "node:fs";
import path from "node:path";
import { configJsonSchemaText } from "../build/src/config/json-schema.js";

const file = path.resolve(import.meta.dirname, "../schema/kcache.schema.json");
fs.mkdirSync(path.dirname(file), { recursive: true });
fs.writeFileSync(file, configJsonSchemaText());
console.log(`wrote ${path.relative(process.cwd(), file)}`);
