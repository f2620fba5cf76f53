import http from "node:http";
import type { AddressInfo } from "node:net";
import { upstreamRequest } from "./upstream-request.js";

/**
 * A loopback proxy in front of s3rver that enforces `If-None-Match: *` on PUT, as AWS S3, MinIO and
 * current Ceph do and s3rver does not. It knows which objects exist from the traffic it forwards (every
 * request of the test goes through it), and serialises conditional PUTs of one key, so of several
 * racing creators exactly one gets 200 and the others 412 Precondition Failed.
 */
export async function conditionalProxy(target: string) {
  const upstream = new URL(target);
  const existing = new Set<string>();
  const locks = new Map<string, Promise<void>>();
  let refused = 0;
  const keyOf = (req: http.IncomingMessage) => (req.url ?? "").split("?")[0] ?? "";
  const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) =>
    new Promise<number>((resolve) => {
      const up = upstreamRequest(upstream, req, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
        r.on("end", () => resolve(r.statusCode ?? 502));
      });
      up.on("error", () => {
        res.destroy();
        resolve(502);
      });
      up.end(body);
    });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const key = keyOf(req);
      const isObjectPut = req.method === "PUT" && !(req.url ?? "").includes("uploadId=");
      if (req.method === "PUT" && req.headers["if-none-match"] === "*") {
        const before = locks.get(key) ?? Promise.resolve();
        let release = () => {};
        const mine = new Promise<void>((r) => {
          release = r;
        });
        locks.set(
          key,
          before.then(() => mine),
        );
        await before;
        try {
          if (existing.has(key)) {
            refused++;
            res.writeHead(412, { "Content-Type": "application/xml" });
            res.end(
              '<?xml version="1.0"?><Error><Code>PreconditionFailed</Code><Message>exists</Message></Error>',
            );
            return;
          }
          const status = await forward(req, res, body);
          if (status === 200) existing.add(key);
        } finally {
          release();
        }
        return;
      }
      const status = await forward(req, res, body);
      if (status >= 200 && status < 300) {
        if (isObjectPut) existing.add(key);
        else if (req.method === "POST" && (req.url ?? "").includes("uploadId=")) existing.add(key);
        else if (req.method === "DELETE" && !(req.url ?? "").includes("uploadId=")) existing.delete(key);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
