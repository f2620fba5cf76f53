import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { checkJobFolder, checkRun, checkStore, type Damage, POISON, storeObjects } from "./oracle.js";
import { CORE, EVIL_CODE, mainCode, prCode, reference, UNPLACED_CODE, type Workload } from "./reference.js";
import type { NetFault } from "./s3-world.js";
import type { CliRun, JobShell, Runner, Trust, World } from "./world.js";

/**
 * The steps of the simulation, each a plain record (so a failing sequence prints as data a test can
 * replay), and what each does in the world. A job is a whole CI job: kcache's restore, the job's
 * compiles and kcache's save (drop-in), or `kcache run`; `beside` are other processes acting on the
 * same runner folder (or the job's socket) while it runs, none of which ran kcache unless said.
 */
export type Beside =
  /** A process that never ran kcache compiles its own kernels into the runner's folder. */
  | "evil-compiles"
  /** The same, then dates its files an hour ahead. */
  | "evil-dated-ahead"
  /** A process overwrites, in place, a file of an entry the job compiled. */
  | "poison"
  /** An entry folder that is a symlink to a folder outside every cache, and an entry whose file is one. */
  | "symlinks"
  /** A FIFO where an entry's file lies. */
  | "fifo"
  /** A pull request's whole job (kcache restore, compiles, save) on the same folder meanwhile. */
  | "pr-job"
  /** The job's own process sends kcache's lookup socket lines no hook sends. */
  | "hostile-lines"
  /** Another job deletes every live-job marker in the folder. */
  | "delete-markers";

export interface JobStep {
  step: "job";
  trust: Trust;
  runner: Runner;
  mode: "drop-in" | "run";
  lazy: boolean;
  live: boolean;
  pr: number;
  /** A push of a new revision to the default branch (main jobs). */
  push: boolean;
  beside: Beside[];
  /** kill -9 of one of the job's kcache commands after `ms`. */
  kill: { phase: "restore" | "save" | "run"; ms: number } | null;
  /** On an S3 store: how the network and server fail the job's requests. */
  net?: NetFault | null;
}

export type StoreFault =
  | "delete-pack"
  | "truncate-pack"
  | "fifo-pack"
  | "delete-live-pack"
  | "fifo-live-record"
  | "garbage-live-record"
  | "fifo-state"
  | "devzero-state"
  | "garbage-manifest"
  /** The store lost a key's manifest (GitHub's cache evicts entries one by one). */
  | "delete-manifest";

export interface FaultStep {
  step: "fault";
  fault: StoreFault;
  /** Which object (an index into the candidates, sorted by name). */
  pick: number;
}

export interface PruneStep {
  step: "prune";
  keep: number;
}

export interface TrimStep {
  step: "trim";
  runner: "A" | "B";
  maxKb: number;
}

export type Step = JobStep | FaultStep | PruneStep | TrimStep;

/** The simulation's state between steps: the world and what it did to the store. */
export interface Sim {
  world: World;
  damage: Damage;
  jobs: number;
  /** The steps run so far, in order. */
  ran: Step[];
}

/** Runs one step, then checks every invariant; the violations found so far are on the world. */
export async function runStep(sim: Sim, s: Step): Promise<void> {
  const { world } = sim;
  world.note(JSON.stringify(s));
  sim.ran.push(s);
  const s3 = world.store.s3;
  if (s.step === "job") {
    s3?.setFault(s.net ?? null);
    try {
      await runJob(sim, s);
    } finally {
      s3?.setFault(null);
    }
  } else if (s.step === "fault") await storeFault(sim, s);
  else if (s.step === "prune") await prune(sim, s);
  else await trim(sim, s);
  if (s3) await s3.mirror(world.store.prefix as string, world.storeDir);
  checkStore(world, sim.damage);
}

function ownCode(s: JobStep, rev: number): Workload {
  if (s.trust === "main") return mainCode(rev);
  if (s.trust === "pr") return prCode(s.pr, false);
  if (s.trust === "fork" || s.trust === "two-cis") return prCode(s.pr, true);
  return UNPLACED_CODE;
}

async function runJob(sim: Sim, s: JobStep): Promise<void> {
  const { world } = sim;
  const n = ++sim.jobs;
  const rev = s.trust === "main" && s.push ? world.nextRevision() : world.revision;
  const { cache, state } = world.folder(s.runner, n);
  const isolate = s.runner === "B";
  const config = world.config({
    lazy: s.lazy,
    live: s.live,
    isolate,
    name: `${s.lazy ? "lazy" : "eager"}-${s.live ? "live" : "plain"}-${isolate ? "isolate" : "shared"}`,
  });
  const own = ownCode(s, rev);
  const env = {
    ...world.env(s.trust, cache, state, rev, s.pr, s.runner),
    SIM_PREFIX: own.prefix,
    SIM_AUTOTUNED: String(own.autotuned),
  };
  const killAt = (phase: "restore" | "save" | "run") =>
    s.kill?.phase === phase ? { killAfterMs: s.kill.ms } : {};
  // The job's own shell: its kcache commands run under it, as under a runner's job script.
  const shell = world.jobShell(n);
  try {
    await jobSteps(sim, s, { n, rev, cache, config, own, env, killAt, shell });
  } finally {
    shell.close();
  }
}

async function jobSteps(
  sim: Sim,
  s: JobStep,
  j: {
    n: number;
    rev: number;
    cache: string;
    config: string;
    own: Workload;
    env: NodeJS.ProcessEnv;
    killAt: (phase: "restore" | "save" | "run") => { killAfterMs?: number };
    shell: JobShell;
  },
): Promise<void> {
  const { world } = sim;
  const { n, rev, cache, config, own, env, killAt, shell } = j;
  const what = `job ${n} (${s.trust} on runner ${s.runner}, ${s.mode})`;
  let folder = cache;
  let interrupted = false;
  if (s.mode === "drop-in") {
    const r = await shell.cli(["restore", "-c", config, "--json"], env, killAt("restore"));
    checkRun(world, r, `${what}: restore`);
    folder = restoredFolder(r) ?? cache;
    // I4 as the job gets its entries, before its compiles: Triton compiles again every kernel whose
    // group file names another folder and writes it anew, so the check after the job cannot see it.
    if (s.runner === "fresh")
      checkJobFolder(world, folder, s.trust !== "main", `${what}'s folder after its restore`);
    await world.workload(CORE, folder);
    await world.workload(own, folder);
    await besideJob(sim, s, cache, folder, null, rev);
    const saved = await shell.cli(["save", "-c", config, "--json"], env, killAt("save"));
    checkRun(world, saved, `${what}: save`);
  } else {
    const signal = s.beside.length ? path.join(world.dir, `beside-${n}`) : "";
    const running = shell.cli(
      ["run", "-c", config, "--profile", "job"],
      { ...env, SIM_BESIDE: signal },
      killAt("run"),
    );
    if (signal) {
      const ready = await waitFor(`${signal}.ready`, running);
      if (ready) {
        const jobEnv = readEnv(`${signal}.env`);
        folder = jobEnv.TRITON_CACHE_DIR ?? cache;
        await besideJob(sim, s, cache, folder, jobEnv.KCACHE_LAZY_SOCKET ?? null, rev);
      }
      fs.writeFileSync(`${signal}.done`, "");
    }
    const ran = await running;
    checkRun(world, ran, `${what}: run`);
    // A kill -9 of kcache run leaves its command running (a process group of its own): a CI runner
    // cancelling the job ends them all, and so does the world here (seed 603 of long run d: the
    // job's own compile, cut off, left an entry with no group file, which Triton takes as absent).
    interrupted = ran.killed;
    if (interrupted) world.endJobProcesses(folder);
  }
  // Only a folder no other process wrote can be held to what its entries' producers wrote.
  if (s.runner === "fresh" && !s.beside.some((b) => b !== "hostile-lines" && b !== "delete-markers"))
    checkJobFolder(world, folder, s.trust !== "main", `${what}'s folder after the job`, interrupted);
}

/** Where the restore says the job's cache is (a folder of its own under isolate). */
function restoredFolder(r: CliRun): string | null {
  try {
    const report = JSON.parse(r.stdout) as { caches?: { name: string; path: string }[] };
    return report.caches?.find((c) => c.name === "triton")?.path ?? null;
  } catch {
    return null;
  }
}

/** Waits for the job to reach its `beside` command; false when it ended first (killed, failed). */
async function waitFor(file: string, running: Promise<CliRun>): Promise<boolean> {
  let ended = false;
  void running.then(() => {
    ended = true;
  });
  while (!ended) {
    if (fs.existsSync(file)) return true;
    await sleep(20);
  }
  return fs.existsSync(file);
}

function readEnv(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** What other processes do while the job runs: on the runner's folder `shared`, the job's own `folder`, or its socket. */
async function besideJob(
  sim: Sim,
  s: JobStep,
  shared: string,
  folder: string,
  socket: string | null,
  rev: number,
): Promise<void> {
  const { world } = sim;
  for (const b of s.beside) {
    if (b === "evil-compiles" || b === "evil-dated-ahead") {
      await world.workload(EVIL_CODE, shared);
      if (b === "evil-dated-ahead") {
        const ahead = Date.now() / 1000 + 3600;
        for (const name of reference().byPrefix.get(EVIL_CODE.prefix) ?? []) {
          const dir = path.join(shared, name);
          if (!fs.existsSync(dir)) continue;
          for (const f of fs.readdirSync(dir)) fs.utimesSync(path.join(dir, f), ahead, ahead);
        }
      }
    } else if (b === "poison") {
      const victims = [...(reference().byPrefix.get(ownCode(s, rev).prefix) ?? [])].filter((e) =>
        fs.existsSync(path.join(shared, e)),
      );
      const victim = victims.sort()[0];
      if (victim) {
        const dir = path.join(shared, victim);
        for (const f of fs.readdirSync(dir).filter((x) => !x.startsWith("__grp__")))
          fs.writeFileSync(path.join(dir, f), POISON); // in place, as a process writing through the file would
      }
    } else if (b === "symlinks") {
      // An entry folder that is a link to a folder outside every cache, shaped as an entry (its group
      // file, a file holding the secret), and an entry whose file is a link to the secret.
      const outside = world.outsideEntry();
      const linked = path.join(folder, "Q".repeat(52));
      fs.rmSync(linked, { recursive: true, force: true });
      fs.symlinkSync(outside, linked);
      const entry = path.join(folder, "R".repeat(52));
      fs.rmSync(entry, { recursive: true, force: true });
      fs.mkdirSync(entry, { recursive: true });
      fs.symlinkSync(path.join(world.secretDir, "secret.txt"), path.join(entry, "k.json"));
      fs.writeFileSync(
        path.join(entry, "__grp__k.json"),
        JSON.stringify({ child_paths: { "k.json": path.join(entry, "k.json") } }),
      );
      // Lines as the hook sends them, each file with its digest: the job's own process can send what it
      // likes, so only the scan's refusal of links keeps the secret out of the store.
      const said = (folder: string, file: string) => ({
        wrote: folder,
        file,
        sha256: createHash("sha256")
          .update(fs.readFileSync(path.join(folder, file)))
          .digest("hex"),
      });
      if (socket)
        await sendLines(socket, [
          said(linked, "k.json"),
          said(linked, "__grp__k.json"),
          said(entry, "k.json"),
          said(entry, "__grp__k.json"),
        ]);
    } else if (b === "fifo") {
      const entry = path.join(folder, "F".repeat(52));
      fs.rmSync(entry, { recursive: true, force: true });
      fs.mkdirSync(entry, { recursive: true });
      fifo(path.join(entry, "k.json"));
      fs.writeFileSync(
        path.join(entry, "__grp__k.json"),
        JSON.stringify({ child_paths: { "k.json": path.join(entry, "k.json") } }),
      );
      if (socket) await sendLines(socket, [{ wrote: entry }]);
    } else if (b === "pr-job") {
      await runJob(sim, {
        step: "job",
        trust: "pr",
        runner: s.runner,
        mode: "drop-in",
        lazy: false,
        live: false,
        pr: s.pr,
        push: false,
        beside: [],
        kill: null,
      });
    } else if (b === "hostile-lines") {
      if (socket)
        await sendLines(socket, [
          null,
          [],
          "x",
          7,
          { wrote: 5 },
          { wrote: "/etc" },
          { wrote: path.join(folder, "..", "..") },
          { folder: null },
          { folder: "/", file: 5 },
          { stop: true },
          Buffer.from([0xff, 0xfe, 0x00, 0x0a]),
          `${"x".repeat(70_000)}`,
        ]);
    } else if (b === "delete-markers") {
      for (const f of fs.existsSync(shared) ? fs.readdirSync(shared) : [])
        if (f.startsWith(".kcache-live-")) fs.rmSync(path.join(shared, f), { force: true });
    }
  }
}

/** Sends each line on a connection of its own and waits (a little) for an answer, as a job's process would. */
async function sendLines(socket: string, lines: unknown[]): Promise<void> {
  for (const line of lines) {
    const data = Buffer.isBuffer(line)
      ? line
      : Buffer.from(`${typeof line === "string" && line.length > 1000 ? line : JSON.stringify(line)}\n`);
    await new Promise<void>((resolve) => {
      const conn = net.createConnection(socket);
      const done = () => {
        clearTimeout(timer);
        conn.destroy();
        resolve();
      };
      const timer = setTimeout(done, 3000);
      conn.on("error", done);
      conn.on("data", done);
      conn.on("close", done);
      conn.on("connect", () => conn.write(data));
    });
  }
}

function fifo(file: string): void {
  // mkfifo(1): Node has no call of its own for it.
  execFileSync("mkfifo", [file]);
}

/** Damages one object of the store (or a runner's state) as bad luck or another process would. */
async function storeFault(sim: Sim, s: FaultStep): Promise<void> {
  const { world, damage } = sim;
  const s3 = world.store.s3;
  if (s3) return s3StoreFault(sim, s, s3);
  const root = world.storeDir;
  const all = storeObjects(root);
  const pickOf = (list: string[]) => (list.length ? (list.sort()[s.pick % list.length] as string) : null);
  const mark = (object: string) => damage.set(object, new Set(all.filter((x) => x.startsWith("manifests/"))));
  const file = (o: string) => path.join(root, o);
  switch (s.fault) {
    case "delete-pack":
    case "truncate-pack":
    case "fifo-pack": {
      const o = pickOf(all.filter((x) => x.startsWith("packs/")));
      if (!o) return;
      mark(o);
      fs.rmSync(file(o), { force: true });
      if (s.fault === "truncate-pack") fs.writeFileSync(file(o), "short");
      if (s.fault === "fifo-pack") fifo(file(o));
      return;
    }
    case "delete-live-pack": {
      const o = pickOf(all.filter((x) => x.startsWith("live/") && x.endsWith(".tar.zst")));
      if (!o) return;
      mark(o);
      fs.rmSync(file(o), { force: true });
      return;
    }
    case "fifo-live-record":
    case "garbage-live-record": {
      const o = pickOf(all.filter((x) => x.startsWith("live/") && x.endsWith(".json")));
      if (!o) return;
      mark(o);
      fs.rmSync(file(o), { force: true });
      if (s.fault === "fifo-live-record") fifo(file(o));
      else fs.writeFileSync(file(o), "null");
      return;
    }
    case "garbage-manifest":
    case "delete-manifest": {
      const o = pickOf(all.filter((x) => x.startsWith("manifests/")));
      if (!o) return;
      mark(o);
      if (s.fault === "delete-manifest") fs.rmSync(file(o), { force: true });
      else fs.writeFileSync(file(o), '{"integrity":"0"}\nnull');
      return;
    }
    case "fifo-state":
    case "devzero-state": {
      const dir = path.join(world.dir, `runner-${s.pick % 2 ? "A" : "B"}`, "state");
      const states = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".json")) : [];
      const f = pickOf(states);
      if (!f) return;
      fs.rmSync(path.join(dir, f), { force: true });
      if (s.fault === "fifo-state") fifo(path.join(dir, f));
      else fs.symlinkSync("/dev/zero", path.join(dir, f));
      return;
    }
  }
}

async function prune(sim: Sim, s: PruneStep): Promise<void> {
  const { world } = sim;
  const { cache, state } = world.folder("A", 0);
  const config = world.config({ lazy: false, live: false, isolate: false, name: "eager-plain-shared" });
  const r = await world.cli(
    ["prune", "-c", config, "--keep", String(s.keep)],
    world.env("main", cache, state, world.revision),
  );
  checkRun(world, r, "prune");
}

async function trim(sim: Sim, s: TrimStep): Promise<void> {
  const { world } = sim;
  const { cache, state } = world.folder(s.runner, 0);
  const config = world.config({
    lazy: false,
    live: false,
    isolate: s.runner === "B",
    name: `eager-plain-${s.runner === "B" ? "isolate" : "shared"}`,
  });
  const r = await world.cli(
    ["trim", "-c", config, "--max-size", `${s.maxKb}KB`],
    world.env("main", cache, state, world.revision),
  );
  checkRun(world, r, `trim of runner ${s.runner}`);
}

/** The same faults on an S3 store, where an object can be lost or damaged but never be a FIFO. */
async function s3StoreFault(sim: Sim, s: FaultStep, s3: NonNullable<World["store"]["s3"]>): Promise<void> {
  const { world, damage } = sim;
  const prefix = world.store.prefix as string;
  const all = await s3.mirror(prefix, world.storeDir);
  const pickOf = (list: string[]) => (list.length ? (list.sort()[s.pick % list.length] as string) : null);
  const target: Record<string, [(o: string) => boolean, Buffer | null]> = {
    "delete-pack": [(o) => o.startsWith("packs/"), null],
    "truncate-pack": [(o) => o.startsWith("packs/"), Buffer.from("short")],
    "delete-live-pack": [(o) => o.startsWith("live/") && o.endsWith(".tar.zst"), null],
    "garbage-live-record": [(o) => o.startsWith("live/") && o.endsWith(".json"), Buffer.from("null")],
    "garbage-manifest": [(o) => o.startsWith("manifests/"), Buffer.from('{"integrity":"0"}\nnull')],
    "delete-manifest": [(o) => o.startsWith("manifests/"), null],
  };
  const t = target[s.fault];
  if (!t) return;
  const o = pickOf(all.filter(t[0]));
  if (!o) return;
  damage.set(o, new Set(all.filter((x) => x.startsWith("manifests/"))));
  await s3.damage(`${prefix}${o}`, t[1]);
}
