import type { Config } from "../config/load.js";
import { localStore } from "./local.js";
import type { Store } from "./store.js";

/** The store a configuration names. */
export function openStore(config: Config): Store {
  return localStore(config.store.path);
}
