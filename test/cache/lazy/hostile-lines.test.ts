import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { liveObjectsIn, liveProject } from "../../helpers/live-project.js";
import { SIM } from "../../helpers/python-sim.js";

/**
 * A process of the job that speaks to kcache's lookup socket ($KCACHE_LAZY_SOCKET) as no hook
 * would: every JSON value that is not a request, requests with fields of the wrong types, bytes that
 * are not UTF-8, a 100 MB line with no newline, and 300 connections held open at once. Writes what
 * it was answered to argv[1], and the socket's path beside it.
 */
const HOSTILE = String.raw`
import json, os, socket, sys
sock, out = os.environ["KCACHE_LAZY_SOCKET"], sys.argv[1]
open(out + ".socket", "w").write(sock)
LINES = [b"null", b"42", b"1e999", b"[1, 2]", b'"text"', b"true", b"{}", b'{"wrote": 5}', b'{"wrote": null}',
         b'{"wrote": ["a"]}', b'{"folder": 7, "file": []}', b'{"folder": null}', b'{"folder": "/etc", "file": 3}',
         b'{"wrote": "/"}', b'{"wrote": "../../etc"}', b'{"folder": "a\\u0000b", "file": "k"}', b"\xff\xfe\xfd{",
         b'{"__proto__": {"wrote": "x"}}', b'{"stop": true}', b'{"stop": "yes", "folder": {"a": 1}}',
         b'{"wrote": "' + b"x" * 15000 + b'"}']

def ask(line):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(sock)
    s.sendall(line + b"\n")
    got = b""
    while not got.endswith(b"\n"):
        piece = s.recv(4096)
        if not piece:
            break
        got += piece
    s.close()
    return got.decode("utf8", "replace")

answers = [ask(l) for l in LINES]
# 100 MB with no newline: the server closes the connection past its bound, never reads it whole.
big = socket.socket(socket.AF_UNIX)
big.settimeout(60)
big.connect(sock)
closed = False
try:
    for _ in range(100):
        big.sendall(b"x" * (1 << 20))
except OSError:
    closed = True
big.close()
idle = []
for _ in range(300):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    idle.append(c)
after = ask(b'{"folder": "/nowhere/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST", "file": "k.json"}')
for c in idle:
    c.close()
json.dump({"answers": answers, "bigClosed": closed, "after": after}, open(out, "w"))
`;

describe("the lookup socket answers any line a job's process sends (cache/lazy/lookup-server.ts)", () => {
  it("kcache run with store.live: hostile lines, a 100 MB line and 300 idle connections are each answered or closed; the run passes, reports, saves and removes its socket folder", async () => {
    const p = liveProject({
      profiles: {
        hostile: {
          commands: ["python3 hostile.py answers.json", `python3 ${SIM}/workload.py 3 0`],
        },
      },
    });
    fs.writeFileSync(path.join(p.dir, "hostile.py"), HOSTILE);
    const r = await p.run("hostile", "r1", "a");
    expect(r.report.save.outcome).toBe("saved");
    expect(r.report.lazy).toMatchObject({ storeDown: null });
    expect(r.report.lazy.liveWritten).toBeGreaterThan(0);
    const seen = JSON.parse(fs.readFileSync(path.join(p.dir, "answers.json"), "utf8"));
    expect(seen.answers).toHaveLength(21);
    for (const a of seen.answers) expect(JSON.parse(a)).toMatchObject({ placed: false });
    expect(seen.bigClosed).toBe(true);
    expect(JSON.parse(seen.after)).toMatchObject({ placed: false });
    // Nothing the lines named was shared: only the workload's own entries.
    const cache = path.join(p.dir, "r1", "triton");
    for (const name of liveObjectsIn(p.store).keys())
      expect(fs.existsSync(path.join(cache, name))).toBe(true);
    const socket = fs.readFileSync(path.join(p.dir, "answers.json.socket"), "utf8");
    expect(fs.existsSync(path.dirname(socket))).toBe(false);
  });
});
