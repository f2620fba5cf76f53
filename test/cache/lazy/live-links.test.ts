import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { liveObjectsIn, liveProject } from "../../helpers/live-project.js";
import { SIM } from "../../helpers/python-sim.js";

const SECRET = "TOPSECRET-7f3a9c";
const LINKED = "L".repeat(52);
const REAL = "R".repeat(52);

/**
 * A job's process that points the cache at files outside it and says it wrote them: an entry folder
 * that is a link to a folder of its own (a complete-looking entry holding the secret), a real entry
 * folder holding a link to the secret, and `wrote` lines naming folders outside the cache.
 */
const PLANT = String.raw`
import hashlib, json, os, socket
cache = os.environ["TRITON_CACHE_DIR"]
outside = os.path.abspath("outside")
os.makedirs(os.path.join(outside, "entry"), exist_ok=True)
open(os.path.join(outside, "entry", "launcher.so"), "w").write("${SECRET}")
open(os.path.join(outside, "secret.so"), "w").write("${SECRET}")
os.makedirs(cache, exist_ok=True)
linked = os.path.join(cache, "${LINKED}")
os.symlink(os.path.join(outside, "entry"), linked)
real = os.path.join(cache, "${REAL}")
os.makedirs(real)
open(os.path.join(real, "k.so"), "w").write("a launcher of its own")
os.symlink(os.path.join(outside, "secret.so"), os.path.join(real, "leak.so"))

def wrote(folder, file=None):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(os.environ["KCACHE_LAZY_SOCKET"])
    line = {"wrote": folder}
    if file:  # as kcache's hook says a write: the file and its digest as written
        line.update(file=file, sha256=hashlib.sha256(open(os.path.join(folder, file), "rb").read()).hexdigest())
    s.sendall((json.dumps(line) + "\n").encode())
    s.recv(4096)
    s.close()

wrote(real, "k.so")

for folder in [linked, real, os.path.join(outside, "entry"), outside, cache, "/",
               os.path.join(cache, "..", "..", "outside", "entry"), os.path.join(cache, "${LINKED}", "..", "..")]:
    wrote(folder)
`;

describe("live uploads take entries as a save does (cache/lazy/live-writer.ts)", () => {
  it("an entry folder linked outside the cache is refused and said; a link inside an entry is left out; folders outside any cache are ignored: no live pack holds the secret", async () => {
    const p = liveProject({
      profiles: { plant: { commands: ["python3 plant.py", `python3 ${SIM}/workload.py 2 0`] } },
    });
    fs.writeFileSync(path.join(p.dir, "plant.py"), PLANT);
    const r = await p.run("plant", "r1", "a");
    const live = liveObjectsIn(p.store);
    expect(live.has(LINKED)).toBe(false);
    expect([...live.keys()].filter((n) => !fs.existsSync(path.join(p.dir, "r1", "triton", n)))).toEqual([]);
    // The real entry is shared without the link in it; the workload's own entries are shared too.
    expect(live.has(REAL)).toBe(true);
    for (const { pack } of live.values()) {
      const tar = execFileSync("zstd", ["-dc", pack]);
      expect(tar.includes(SECRET), pack).toBe(false);
    }
    const tar = execFileSync("zstd", ["-dc", (live.get(REAL) as { pack: string }).pack]).toString("latin1");
    expect(tar).toContain("k.so");
    expect(tar).not.toContain("leak.so");
    expect(r.stderr).toContain(`live: triton/${LINKED} refused`);
  });
});
