import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { removeStaleServers } from "../../../src/cache/lazy/lookup-server.js";
import { tempDir } from "../../helpers/sandbox.js";

const HOUR_AGO = new Date(Date.now() - 3600_000);

/** A server's folder whose process was killed -9 while it listened: the socket file stays, no one answers. */
async function killedServer(tmp: string, name: string): Promise<string> {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  const socket = path.join(dir, "dead.sock");
  const child = spawn(process.execPath, [
    "-e",
    `require("net").createServer().listen(${JSON.stringify(socket)}, () => console.log("up"))`,
  ]);
  await new Promise((r) => child.stdout.once("data", r));
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
  expect(fs.existsSync(socket)).toBe(true);
  return dir;
}

describe("folders of lookup servers that died", () => {
  it("are removed once older than a minute; a live server's, a young one's and other folders stay", async () => {
    const tmp = tempDir("stale-servers");
    const dead = await killedServer(tmp, "kcache-lazy-dead01");
    const young = await killedServer(tmp, "kcache-lazy-young1");
    const liveDir = path.join(tmp, "kcache-lazy-live01");
    fs.mkdirSync(liveDir);
    const server = net.createServer((c) => c.end());
    await new Promise<void>((r) => server.listen(path.join(liveDir, "up.sock"), () => r()));
    const other = path.join(tmp, "someone-else");
    fs.mkdirSync(other);
    for (const d of [dead, liveDir, other]) fs.utimesSync(d, HOUR_AGO, HOUR_AGO);
    try {
      expect(await removeStaleServers(tmp)).toBe(1);
      expect(fs.existsSync(dead)).toBe(false);
      for (const d of [young, liveDir, other]) expect(fs.existsSync(d), d).toBe(true);
    } finally {
      server.close();
    }
  });
});
