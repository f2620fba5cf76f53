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
  "memory",
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

/**
 * The table of what the scenarios measured, printed. With KCACHE_FAULTS_WRITE=1 also RELIABILITY.md's
 * and the raw rows (a full run: every row); with KCACHE_FAULTS_WRITE=merge, the rows of the scenarios
 * this run measured replace theirs in the raw file, whose other rows stay, and RELIABILITY.md says which
 * rows were measured alone, when and where.
 */
function writeTable(): void {
  if (!fs.existsSync(ROWS_DIR)) return;
  const rows = fs
    .readdirSync(ROWS_DIR)
    .map((f) => JSON.parse(fs.readFileSync(path.join(ROWS_DIR, f), "utf8")) as FaultRow);
  process.stdout.write(`\n${render(ordered(rows))}\n`);
  const mode = process.env.KCACHE_FAULTS_WRITE;
  if (mode !== "1" && mode !== "merge") return;
  const rawFile = path.join(ROOT, "bench/results/faults.json");
  const now = { date: new Date().toISOString().slice(0, 10), machine: machine() };
  const raw: RawFaults =
    mode === "merge"
      ? mergedRows(JSON.parse(fs.readFileSync(rawFile, "utf8")) as RawFaults, rows, now)
      : { ...now, rows: ordered(rows) };
  fs.mkdirSync(path.dirname(rawFile), { recursive: true });
  fs.writeFileSync(rawFile, `${JSON.stringify(raw, null, 1)}\n`);
  const doc = path.join(ROOT, "RELIABILITY.md");
  const text = fs.readFileSync(doc, "utf8");
  const start = "<!-- faults:start -->";
  const end = "<!-- faults:end -->";
  const alone = new Map<string, string[]>();
  for (const r of raw.remeasured ?? []) {
    const when = `on ${r.date} (${r.machine})`;
    alone.set(when, [...(alone.get(when) ?? []), `"${r.fault}"`]);
  }
  const header = [
    `Measured by \`KCACHE_FAULTS_WRITE=1 npm run test:faults\` on ${raw.date}: ${raw.machine}.`,
    ...[...alone].map(
      ([when, faults]) =>
        `Measured alone ${when}, their files only (\`KCACHE_FAULTS_WRITE=merge\`): ${faults.join("; ")}.`,
    ),
  ].join("\n");
  const block = `${start}\n${header}\n\n${render(raw.rows)}\n${end}`;
  fs.writeFileSync(doc, text.replace(new RegExp(`${start}[\\s\\S]*${end}`), block));
}

/** bench/results/faults.json: the last full run's date and machine, its rows, and the rows measured alone since. */
interface RawFaults {
  date: string;
  machine: string;
  rows: FaultRow[];
  remeasured?: { fault: string; date: string; machine: string }[];
}

/** The raw file with this run's rows in place of those of the same scenario, and noted as measured alone. */
function mergedRows(old: RawFaults, rows: FaultRow[], now: { date: string; machine: string }): RawFaults {
  const fresh = new Set(rows.map((r) => r.fault));
  return {
    date: old.date,
    machine: old.machine,
    rows: ordered([...old.rows.filter((r) => !fresh.has(r.fault)), ...rows]),
    remeasured: [
      ...(old.remeasured ?? []).filter((r) => !fresh.has(r.fault)),
      ...rows.map((r) => ({ fault: r.fault, ...now })),
    ],
  };
}

function ordered(rows: FaultRow[]): FaultRow[] {
  return [...rows].sort((a, b) => rank(a.fault) - rank(b.fault) || (a.fault < b.fault ? -1 : 1));
}

function rank(fault: string): number {
  const i = ORDER.findIndex((o) => fault.startsWith(o));
  return i < 0 ? ORDER.length : i;
}

function machine(): string {
  const cpu = os.cpus()[0]?.model.replace(/\s+/g, " ").trim() ?? "unknown CPU";
  return `${cpu}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
}
