import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { packageFile } from "./package-file.js";

/**
 * A real S3-compatible server process on 127.0.0.1: s3rver, the Node implementation of the S3 REST
 * API (objects on disk, multipart uploads, ListObjectsV2, SigV4). It does not honour
 * `If-None-Match` on PUT, so kcache's fallback for such servers is what runs against it.
 */
export interface S3Server {
  endpoint: string;
  bucket: string;
  dir: string;
  stop(): Promise<void>;
}

export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" };

export async function startS3rver(bucket = "kcache-test"): Promise<S3Server> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "s3rver-"));
  const bin = packageFile("s3rver", "bin/s3rver.js");
  const child: ChildProcess = spawn(
    process.execPath,
    [bin, "-d", dir, "-a", "127.0.0.1", "-p", "0", "--configure-bucket", bucket, "--no-vhost-buckets"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on [^:\s]+:(\d+)/i.exec(out) ?? /:(\d+)\s*$/m.exec(out);
      if (m) resolve(Number(m[1]));
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code) => reject(new Error(`s3rver exited ${code}: ${out}`)));
    // The limit ends a hang only: a loaded machine takes its time starting a Node server.
    setTimeout(() => reject(new Error(`s3rver did not start: ${out}`)), 180_000);
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    dir,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill();
      }),
  };
}
