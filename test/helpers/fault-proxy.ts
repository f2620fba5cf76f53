import http from "node:http";
import type { AddressInfo } from "node:net";
import { upstreamRequest } from "./upstream-request.js";

/** What the proxy does to a request it is given: pass it on, or fail it in one of the ways stores fail. */
export type Fault =
  | { kind: "pass" }
  | { kind: "status"; status: number; retryAfter?: string }
  | { kind: "hang" }
  | { kind: "garbage" }
  | { kind: "truncate"; bytes: number }
  /** Passes the headers and the first `bytes` of the body, then sends nothing more, keeping the connection open. */
  | { kind: "stall"; bytes: number }
  /** Passes the headers and the first `bytes` of the body, flushed, then resets the connection (TCP RST). */
  | { kind: "reset"; bytes: number }
  /** Resets the connection before any answer: a keep-alive connection the server closed as it was reused. */
  | { kind: "drop" }
  /**
   * Passes the request on whole and lets the server act on it, then resets the connection instead of
   * answering: a write that landed whose answer was lost (a flaky network, a proxy's timeout).
   */
  | { kind: "lose-answer" };

export interface ProxyLog {
  method: string;
  url: string;
  at: number;
  fault: Fault["kind"];
}

/**
 * An HTTP proxy on 127.0.0.1 in front of a real server, that fails requests on purpose: a chosen
 * status with Retry-After, a connection that never answers, a garbage body, a body cut short, a body
 * that stops midway and hangs, a connection reset midway.
 */
export async function faultProxy(target: string, choose: (req: http.IncomingMessage, n: number) => Fault) {
  const log: ProxyLog[] = [];
  const hung: http.ServerResponse[] = [];
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const fault = choose(req, log.length);
    log.push({ method: req.method ?? "", url: req.url ?? "", at: Date.now(), fault: fault.kind });
    if (fault.kind === "drop") {
      req.socket.resetAndDestroy();
      return;
    }
    if (fault.kind === "hang") {
      hung.push(res);
      req.resume();
      return;
    }
    if (fault.kind === "status") {
      req.resume();
      res.writeHead(fault.status, fault.retryAfter ? { "Retry-After": fault.retryAfter } : {});
      res.end(
        `<?xml version="1.0"?><Error><Code>${fault.status === 429 ? "SlowDown" : "ServiceUnavailable"}</Code><Message>injected</Message></Error>`,
      );
      return;
    }
    if (fault.kind === "garbage") {
      req.resume();
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": "40" });
      res.end(Buffer.alloc(40, 0x5a));
      return;
    }
    const up = upstreamRequest(upstream, req, (r) => {
      if (fault.kind === "lose-answer") {
        r.resume();
        r.on("end", () => req.socket.resetAndDestroy());
        return;
      }
      res.writeHead(r.statusCode ?? 502, r.headers);
      if (fault.kind === "stall") {
        hung.push(res);
        let sent = 0;
        r.on("data", (d: Buffer) => {
          const room = fault.bytes - sent;
          if (room > 0) res.write(d.subarray(0, room));
          sent += Math.min(Math.max(room, 0), d.length);
        });
        return;
      }
      if (fault.kind === "reset") {
        res.flushHeaders();
        let sent = 0;
        r.on("data", (d: Buffer) => {
          const room = fault.bytes - sent;
          if (room <= 0) return;
          sent += Math.min(room, d.length);
          res.write(d.subarray(0, room), () => {
            if (sent >= fault.bytes) res.socket?.resetAndDestroy();
          });
        });
        // A body shorter than the cut passes whole.
        r.on("end", () => {
          if (sent < fault.bytes) res.end();
        });
        return;
      }
      if (fault.kind !== "truncate") {
        r.pipe(res);
        return;
      }
      let sent = 0;
      r.on("data", (d: Buffer) => {
        const room = fault.bytes - sent;
        if (room <= 0) return;
        res.write(d.subarray(0, room));
        sent += Math.min(room, d.length);
        if (sent >= fault.bytes) res.destroy();
      });
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        for (const r of hung) r.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
