import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runTmpdir } from "../helpers/run-tmpdir.js";
import type { FaultRow } from "./harness.js";
import { ROWS_DIR } from "./harness.js";
import { render } from "./table.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const ORDER = [
  "kill -9 during save",
  "kill -9 during restore",
  "racing savers",
  "savers racing prune",
  "prune under skew",
  "restores sharing",
  "hostile",
  "zstd frames",
  "Inductor",
  "S3",
  "GitHub cache",
  "full filesystem",
  "pull-request",
  "pull requests on Buildkite",
  "persistent runner",
  "pull-request job beside",
  "kept answers",
  "Python stack probe",
  "run records",
  "broken config",
  "as downloaded",
];

/** Builds the CLI the scenarios run (tsc's and the bundle npm pack ships), then writes the table of what they measured. */
export default function setup(): () => void {
  execFileSync(
    process.execPath,
    [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: ROOT,
      stdio: "inherit",
    },
  );
  execFileSync(process.execPath, [path.join(ROOT, "scripts/bundle-cli.mjs")], {
    cwd: ROOT,
    stdio: "inherit",
  });
  fs.rmSync(ROWS_DIR, { recursive: true, force: true });
  process.env.KCACHE_FAULT_ROWS = ROWS_DIR;
  const removeTmp = runTmpdir("kcache-faults");
  return () => {
    removeTmp();
    writeTable();
    fs.rmSync(ROWS_DIR, { recursive: true, force: true });
  };
}

/** The table of what the scenarios measured, printed; with KCACHE_FAULTS_WRITE=1 also RELIABILITY.md's and the raw rows. */
function writeTable(): void {
  if (!fs.existsSync(ROWS_DIR)) return;
  const rows = fs
    .readdirSync(ROWS_DIR)
    .map((f) => JSON.parse(fs.readFileSync(path.join(ROWS_DIR, f), "utf8")) as FaultRow)
    .sort((a, b) => rank(a.fault) - rank(b.fault) || (a.fault < b.fault ? -1 : 1));
  const table = render(rows);
  process.stdout.write(`\n${table}\n`);
  if (process.env.KCACHE_FAULTS_WRITE === "1") {
    fs.mkdirSync(path.join(ROOT, "bench/results"), { recursive: true });
    fs.writeFileSync(
      path.join(ROOT, "bench/results/faults.json"),
      `${JSON.stringify({ machine: machine(), date: new Date().toISOString().slice(0, 10), rows }, null, 1)}\n`,
    );
    const doc = path.join(ROOT, "RELIABILITY.md");
    const text = fs.readFileSync(doc, "utf8");
    const start = "<!-- faults:start -->";
    const end = "<!-- faults:end -->";
    const block = `${start}\nMeasured by \`KCACHE_FAULTS_WRITE=1 npm run test:faults\` on ${new Date().toISOString().slice(0, 10)}: ${machine()}.\n\n${table}\n${end}`;
    fs.writeFileSync(doc, text.replace(new RegExp(`${start}[\\s\\S]*${end}`), block));
  }
}

function rank(fault: string): number {
  const i = ORDER.findIndex((o) => fault.startsWith(o));
  return i < 0 ? ORDER.length : i;
}

function machine(): string {
  const cpu = os.cpus()[0]?.model.replace(/\s+/g, " ").trim() ?? "unknown CPU";
  return `${cpu}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
}
