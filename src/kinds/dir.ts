import fs from "node:fs";
import path from "node:path";
import { type CacheKind, type EntryFile, KCACHE_PRIVATE_PREFIX, type ScanResult } from "./kind.js";

/** Any directory, file by file: each regular file is an entry, stored byte for byte. */
export const dirKind: CacheKind = {
  kind: "dir",
  entryShape: "file",
  lookupsSeenByHook: false,

  async scan(root: string): Promise<ScanResult> {
    const result: ScanResult = { entries: [], tempDirs: 0, lockFiles: 0, localFiles: 0, otherFiles: 0 };
    const walk = (rel: string) => {
      let items: fs.Dirent[];
      try {
        items = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
      } catch (e) {
        // The root not there yet, or a folder another process removed mid-scan: nothing in it.
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
        throw e;
      }
      for (const d of items) {
        if (rel === "" && d.name.startsWith(KCACHE_PRIVATE_PREFIX)) continue;
        const childRel = rel ? `${rel}/${d.name}` : d.name;
        if (d.isDirectory()) walk(childRel);
        else if (d.isFile()) {
          let st: fs.Stats;
          try {
            st = fs.statSync(path.join(root, childRel));
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
            throw e;
          }
          const file: EntryFile = {
            rel: "",
            size: st.size,
            mtimeMs: st.mtimeMs,
            atimeMs: st.atimeMs,
            ino: st.ino,
          };
          result.entries.push({ name: childRel, files: [file] });
        } else result.otherFiles++;
      }
    };
    walk("");
    return result;
  },

  incompleteReason(): string | null {
    return null;
  },

  isEntryName(name: string): boolean {
    const parts = name.split("/");
    return parts.every((p) => p !== "" && p !== "." && p !== ".." && !p.includes("\\") && !p.includes("\0"));
  },

  isRelocatable(): boolean {
    return false;
  },

  // Any tool may write any file in place: never shared by a hard link.
  linkSafe(): boolean {
    return false;
  },

  isKernel(): boolean {
    return false;
  },

  isAutotuneResult(): boolean {
    return false;
  },

  normalize(_root, _entryName, _rel, data): Buffer {
    return data;
  },

  relocate(_root, _entryName, _rel, data): Buffer {
    return data;
  },

  packOrder(files: EntryFile[]): EntryFile[] {
    return files;
  },
};
