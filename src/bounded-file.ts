import fs from "node:fs";

/**
 * A file kcache does not trust to be what it should (its own state, a job's telemetry, a worker's
 * results, GitHub's event payload), read so that nothing lying there can block or grow the command:
 * never through a link (to /dev/zero, say), never a blocking open of a FIFO, only a regular file of
 * at most `maxBytes`. Its bytes; null where there is none; why it was refused where something else
 * lies there.
 */
export function readBoundedFile(
  file: string,
  maxBytes: number,
): { bytes: Buffer } | { refused: string } | null {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return { refused: "not a regular file (a FIFO, a device or a folder)" };
    if (st.size > maxBytes) return { refused: `${st.size} bytes, over the ${maxBytes} it may hold` };
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const n = fs.readSync(fd, buf, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    return { bytes: buf.subarray(0, got) };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    if (code === "ELOOP" || code === "EMLINK")
      return { refused: "a symbolic link, which kcache never writes there" };
    return { refused: (e as Error).message };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** The file's text when readBoundedFile reads it; null otherwise (absent, refused). */
export function boundedText(file: string, maxBytes: number): string | null {
  const read = readBoundedFile(file, maxBytes);
  return read && "bytes" in read ? read.bytes.toString("utf8") : null;
}
