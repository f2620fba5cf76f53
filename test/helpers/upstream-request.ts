import http from "node:http";

/**
 * The request a loopback proxy sends on to the real server: the client's method, path and headers,
 * to `upstream`. `onResponse` gets the server's answer; the caller pipes the client's body into it.
 */
export function upstreamRequest(
  upstream: URL,
  req: http.IncomingMessage,
  onResponse: (r: http.IncomingMessage) => void,
): http.ClientRequest {
  return http.request(
    // A connection of its own per request: a kept-alive one the server closes as it is reused would
    // look like a fault of the store the proxy stands in front of.
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent: false,
    },
    onResponse,
  );
}
