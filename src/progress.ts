import { formatBytes } from "./format.js";

/** Counts bytes of one transfer and shows how it goes, if it takes long enough to be worth showing. */
export interface Progress {
  add(bytes: number): void;
  done(): void;
}

export interface ProgressOptions {
  stream: { isTTY?: boolean; write(s: string): unknown };
  /** Nothing is shown for transfers shorter than this. */
  startAfterMs: number;
  /** Redraw period on a terminal. */
  ttyIntervalMs: number;
  /** Line period in CI logs. */
  logIntervalMs: number;
  now?: () => number;
}

export const DEFAULT_PROGRESS: Omit<ProgressOptions, "stream"> = {
  startAfterMs: 2000,
  ttyIntervalMs: 200,
  logIntervalMs: 5000,
};

/**
 * A progress bar on a terminal, redrawn in place; in a CI log (no terminal), one line every few
 * seconds. Both start only after `startAfterMs`, so quick restores print nothing extra.
 */
export function transferProgress(label: string, total: number | null, opts: ProgressOptions): Progress {
  const now = opts.now ?? Date.now;
  const t0 = now();
  let bytes = 0;
  let drawn = false;
  const tty = Boolean(opts.stream.isTTY);
  const line = () => {
    const secs = Math.max(0.001, (now() - t0) / 1000);
    const rate = `${formatBytes(bytes / secs)}/s`;
    if (total && total > 0) {
      const share = Math.min(1, bytes / total);
      const pct = `${Math.floor(share * 100)}%`.padStart(4);
      if (!tty)
        return `kcache: ${label} ${formatBytes(bytes)} of ${formatBytes(total)} (${pct.trim()}), ${rate}`;
      const width = 24;
      const fill = Math.round(share * width);
      return `kcache: ${label} [${"#".repeat(fill)}${"-".repeat(width - fill)}] ${pct} ${formatBytes(bytes)}/${formatBytes(total)} ${rate}`;
    }
    return `kcache: ${label} ${formatBytes(bytes)}, ${rate}`;
  };
  const draw = () => {
    if (now() - t0 < opts.startAfterMs) return;
    drawn = true;
    opts.stream.write(tty ? `\r${line()}\x1b[K` : `${line()}\n`);
  };
  const timer = setInterval(draw, tty ? opts.ttyIntervalMs : opts.logIntervalMs);
  timer.unref();
  return {
    add(n) {
      bytes += n;
    },
    done() {
      clearInterval(timer);
      if (drawn && tty) opts.stream.write(`\r${line()}\x1b[K\n`);
    },
  };
}

/** The progress kcache's commands show: on stderr, with the default thresholds. */
export function stderrProgress(label: string, total: number | null): Progress {
  return transferProgress(label, total, { ...DEFAULT_PROGRESS, stream: process.stderr });
}
