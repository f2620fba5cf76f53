#!/usr/bin/env bash
# The test suite under CPU load (issue 42): RUNS full `npm test` runs of this checkout's HEAD, each in
# a git worktree of its own with its own HOME and TMPDIR, at once, beside HOGS busy loops, every one at
# the same priority (nice 10, so a shell on the machine stays usable). The load average is sampled
# every 30 s. Writes OUT (default bench/results/suite-under-load.json): the commit, each run's exit
# status, seconds and test counts, and the load samples.
#   RUNS=3 HOGS=10 OUT=... bash scripts/suite-under-load.sh   (SUITE: the command, default npm test)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
HOGS=${HOGS:-10}
SUITE=${SUITE:-npm test}
OUT=${OUT:-$PWD/bench/results/suite-under-load.json}
W=$(mktemp -d /tmp/kcache-load-XXXXXX)
commit=$(git rev-parse HEAD)
pids=()
cleanup() {
  kill "${pids[@]}" 2> /dev/null || true
  for i in $(seq "$RUNS"); do git worktree remove --force "$W/tree$i" 2> /dev/null || true; done
}
trap cleanup EXIT
for i in $(seq "$RUNS"); do
  git worktree add -q --detach "$W/tree$i" "$commit"
  cp -a node_modules "$W/tree$i/"
  mkdir -p "$W/home$i" "$W/tmp$i"
done
for _ in $(seq "$HOGS"); do
  nice -n 10 sh -c 'while :; do :; done' &
  pids+=($!)
done
(while :; do
  echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg)" >> "$W/load.txt"
  sleep 30
done) &
pids+=($!)
runners=()
for i in $(seq "$RUNS"); do
  (
    cd "$W/tree$i"
    start=$(date +%s)
    rc=0
    HOME="$W/home$i" TMPDIR="$W/tmp$i" nice -n 10 $SUITE > "$W/run$i.log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - start))" > "$W/done$i"
  ) &
  runners+=($!)
done
wait "${runners[@]}"
node - "$W" "$RUNS" "$HOGS" "$commit" "$OUT" "$SUITE" << 'EOF'
const fs = require("node:fs");
const [w, runs, hogs, commit, out, suite] = process.argv.slice(2);
const plain = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");
const result = {
  command: `RUNS=${runs} HOGS=${hogs}${suite === "npm test" ? "" : ` SUITE="${suite}"`} bash scripts/suite-under-load.sh`,
  commit,
  cores: require("node:os").availableParallelism(),
  hogs: Number(hogs),
  runs: Array.from({ length: Number(runs) }, (_, i) => {
    const [rc, seconds] = fs.readFileSync(`${w}/done${i + 1}`, "utf8").trim().split(" ").map(Number);
    const log = plain(fs.readFileSync(`${w}/run${i + 1}.log`, "utf8"));
    const tests = /Tests\s+(.*)\(\d+\)/.exec(log)?.[1]?.trim() ?? null;
    return { rc, seconds, tests, failed: [...log.matchAll(/FAIL\s+(.*)/g)].map((m) => m[1]) };
  }),
  load: fs.readFileSync(`${w}/load.txt`, "utf8").trim().split("\n").map((l) => Number(l.split(" ")[1])),
};
fs.writeFileSync(out, `${JSON.stringify(result, null, 1)}\n`);
console.log(JSON.stringify({ ...result, load: undefined }, null, 1));
EOF
