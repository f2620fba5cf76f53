import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { S3RVER_CREDENTIALS, type S3Server } from "./s3rver.js";

/**
 * A real S3 server that honours conditional writes, which no server on npm does: Ceph's RADOS
 * Gateway, as scripts/ceph-rgw.sh starts it (one monitor, one OSD keeping objects in memory,
 * radosgw; every socket on 127.0.0.1, every file in one temporary folder). A second
 * `PUT If-None-Match: *` of one key answers 412 there, as on AWS S3, so kcache's conditional path
 * is what runs against it. Ceph 16 (Pacific, Debian 12) ignores If-None-Match on
 * CompleteMultipartUpload and answers an empty ETag to it; HEAD gives the ETag.
 */
const SCRIPT = path.resolve(import.meta.dirname, "../../scripts/ceph-rgw.sh");

const INSTALL = "apt-get install --no-install-recommends radosgw ceph-mon ceph-osd";

/** s3rver's: every S3 test of the suite signs with one pair, whichever server answers. */
export const CEPH_RGW_CREDENTIALS = S3RVER_CREDENTIALS;

/** null when Ceph's daemons are on PATH; otherwise the command that installs them (Debian, Ubuntu). */
export function cephRgwAvailable(): string | null {
  const dirs = (process.env.PATH ?? "").split(path.delimiter).filter(Boolean);
  const onPath = (bin: string) =>
    dirs.some((dir) => {
      try {
        fs.accessSync(path.join(dir, bin), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  return ["ceph-mon", "ceph-osd", "radosgw"].every(onPath) ? null : INSTALL;
}

interface Launched {
  endpoint: string;
  dir: string;
  stop(): Promise<void>;
}

/** One run of the script, up to its RGW_READY line. */
async function launch(): Promise<Launched> {
  // A process group of its own, so that the group can be killed should the script not end when
  // told. The script also stops by itself when this process goes away: a crashed test run leaves
  // no daemons behind.
  const child = spawn("bash", [SCRIPT], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: {
      ...process.env,
      CEPH_RGW_ACCESS_KEY: CEPH_RGW_CREDENTIALS.AWS_ACCESS_KEY_ID,
      CEPH_RGW_SECRET_KEY: CEPH_RGW_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
    },
  });
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let limit: NodeJS.Timeout | undefined;
  const ready = await new Promise<{ endpoint: string; dir: string }>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /^RGW_READY endpoint=(\S+) access=\S+ secret=\S+ dir=(.+)$/m.exec(out);
      if (m?.[1] && m[2]) resolve({ endpoint: m[1], dir: m[2] });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`ceph-rgw.sh exited ${code}: ${out}`)));
    // The script gives up by itself after 180 s with its logs' tail; this limit ends a hang of the
    // script itself. SIGTERM has it kill what it started and remove its folder.
    limit = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error(`ceph-rgw.sh did not start radosgw: ${out}`));
    }, 200_000);
  }).finally(() => clearTimeout(limit));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const late = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 15_000).unref()),
      ]);
      // Only a script that did not end when told: its group still holds it and its daemons.
      if (late && child.pid) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // The group ended meanwhile.
        }
      }
    }
    fs.rmSync(ready.dir, { recursive: true, force: true });
  };
  return { ...ready, stop };
}

export async function startCephRgw(
  bucket = "kcache-test",
): Promise<S3Server & { credentials: typeof CEPH_RGW_CREDENTIALS }> {
  const missing = cephRgwAvailable();
  if (missing) throw new Error(`Ceph's radosgw is not installed: ${missing}`);
  let server: Launched;
  try {
    server = await launch();
  } catch (e) {
    // A daemon that died while starting most likely lost its port to another process between the
    // script's choice and its bind (the script fails at once then): new ports, once.
    if (!/ died\b/.test((e as Error).message)) throw e;
    server = await launch();
  }
  const s3 = new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: {
      accessKeyId: CEPH_RGW_CREDENTIALS.AWS_ACCESS_KEY_ID,
      secretAccessKey: CEPH_RGW_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
    },
  });
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (e) {
    await server.stop();
    throw new Error(`creating bucket ${bucket} on radosgw: ${(e as Error).message}`);
  } finally {
    s3.destroy();
  }
  return { ...server, bucket, credentials: CEPH_RGW_CREDENTIALS };
}
