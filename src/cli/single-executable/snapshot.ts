import crypto from "node:crypto";
import os from "node:os";
import path from "node:path";
import { locateSeaMain } from "./import-meta-url.js";

type Cli = typeof import("../main.js");

/** What a module could read of the machine as it loads: in a snapshot, the build machine's for good. */
const MACHINE = ["hostname", "homedir", "userInfo", "cpus", "availableParallelism", "tmpdir"] as const;
/** Variables read as the modules load that are harmless to keep, and why. */
const HARMLESS: Record<string, string> = {
  FORCE_COLOR: "Node's own, as it prints its warnings about the snapshot's built-in modules",
  NO_COLOR:
    "Node's own, read with FORCE_COLOR set as it prints those warnings (colours are decided again as a run starts)",
  NODE_DISABLE_COLORS: "Node's own, as NO_COLOR",
  TESTING_TAR_FAKE_PLATFORM:
    "node-tar's test hook for the platform: unset, process.platform, linux at build and run",
  __FAKE_PLATFORM__: "node-tar's test hook, as TESTING_TAR_FAKE_PLATFORM",
  __FAKE_FS_O_FILENAME__: "node-tar's test hook for a Windows flag, unused on linux",
};

/**
 * Node's built-in modules that must not be loaded into a snapshot, and why: a command whose modules
 * load one is not loaded ahead (it loads as it runs).
 */
const UNKEEPABLE: Record<string, string> = {
  "internal/worker":
    "node:worker_threads: a worker started from a snapshot that loaded it fails at its first process.cwd() (the cwd counter it shares with the main thread is lost; Node 20). restore, save, prewarm, run and compare read packs on worker threads",
  http: "node:http does not load into a snapshot (Node 20: Array.prototype.toSorted is missing while one is built)",
};

/**
 * Loads the CLI and the modules of `kcache key` and `kcache stack` while the executable's start-up
 * snapshot is built (in the folder of its files, scripts/build-sea.mjs), so that a run starts with
 * them loaded and Node's built-in modules they use compiled. Only those: every run reads the whole
 * snapshot in, and preloading the other quick commands (ls, inspect, prune, ...) cost `key` 2.4 ms of
 * CPU more than it saved them (measured here); restore and save cannot be (UNKEEPABLE). What a module
 * reads of the environment, the machine or the standard streams as it loads would be the build
 * machine's in every run: a module that does, or one that loads a built-in module a snapshot cannot
 * keep, makes the build fail, naming what it read or loaded.
 */
export function loadAhead(): Promise<Cli> {
  locateSeaMain(path.resolve("cli", "main.js"));
  const read = new Set<string>();
  const restore = watch(read);
  return Promise.all([
    import("../main.js"),
    import("../commands/key.js"),
    import("../commands/stack.js"),
  ]).then(([cli]) => {
    // Made now and kept: the programs of the start-up part's commands, and what Node makes
    // process.stdout and stderr of (a pipe, a terminal). Not node:fs's promise API: `key` uses none,
    // and its modules (readline's among them) cost every run ~1.5 ms to read in.
    cli.prepareCommands(["key", "stack"]);
    require("node:net");
    require("node:tty");
    restore();
    const loaded = (process as unknown as { moduleLoadList: string[] }).moduleLoadList;
    for (const m of Object.keys(UNKEEPABLE))
      if (loaded.includes(`NativeModule ${m}`)) read.add(`${m} (${UNKEEPABLE[m]})`);
    if (read.size)
      throw new Error(
        `modules read or loaded ${[...read].join(", ")} as they load: a snapshot would keep the build machine's values, or break`,
      );
    return cli;
  });
}

/**
 * Notes in `read` each variable, machine fact, standard stream and random id read until the returned
 * function is called.
 */
function watch(read: Set<string>): () => void {
  const env = process.env;
  process.env = new Proxy(env, {
    get(target, name) {
      if (typeof name === "string" && !(name in HARMLESS)) read.add(`process.env.${name}`);
      return Reflect.get(target, name);
    },
  });
  const machine = MACHINE.map((f) => [f, os[f]] as const);
  for (const [f, fn] of machine)
    Object.assign(os, {
      [f]: (...a: unknown[]) => {
        read.add(`os.${f}()`);
        return (fn as (...a: unknown[]) => unknown)(...a);
      },
    });
  // Node keeps a batch of random ids ahead: one drawn now would leave the same batch to every run.
  const randomUUID = crypto.randomUUID;
  crypto.randomUUID = (...a) => {
    read.add("crypto.randomUUID()");
    return randomUUID(...a);
  };
  const cwd = process.cwd;
  process.cwd = () => {
    read.add("process.cwd()");
    return cwd();
  };
  const streams = (["stdout", "stderr", "stdin"] as const).map((s) => {
    const desc = Object.getOwnPropertyDescriptor(process, s) as PropertyDescriptor;
    Object.defineProperty(process, s, {
      ...desc,
      get() {
        read.add(`process.${s}`);
        return desc.get?.call(process);
      },
    });
    return [s, desc] as const;
  });
  return () => {
    process.env = env;
    crypto.randomUUID = randomUUID;
    process.cwd = cwd;
    Object.assign(os, Object.fromEntries(machine));
    for (const [s, desc] of streams) Object.defineProperty(process, s, desc);
  };
}
