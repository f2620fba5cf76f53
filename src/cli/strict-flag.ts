import { isFaultCodeList } from "../cache/faults.js";

/**
 * `--strict` takes fault codes optionally (`--strict entry-bad,disk-failed`), so commander would
 * read the word after a bare `--strict` as its codes: `kcache run --strict bench` must still run the
 * profile bench under --strict. A `--strict` followed by anything but a list of fault codes is
 * rewritten as `--strict=` (every fault) before commander parses.
 */
export function strictArgv(argv: string[]): string[] {
  return argv.map((a, i) => (a === "--strict" && !isFaultCodeList(argv[i + 1]) ? "--strict=" : a));
}
