import type { GhaEnvironment } from "../environment.js";
import { StoreError } from "../errors.js";
import type { StoredObject } from "./store.js";

/** GitHub's REST API for a repository's caches (list, delete), when a token is given. */
export function restApi(runner: GhaEnvironment, callTimeoutMs: number) {
  const { restToken: token, repository: repo, apiUrl: api } = runner;
  if (!token || !repo) return null;
  const call = async (method: string, path: string): Promise<Response> => {
    let res: Response;
    try {
      res = await fetch(`${api}/repos/${repo}/actions/caches${path}`, {
        method,
        headers: {
          Accept: "application/vnd.github+json",
          Authorization: `Bearer ${token}`,
          "X-GitHub-Api-Version": "2022-11-28",
        },
        signal: AbortSignal.timeout(callTimeoutMs),
      });
    } catch (e) {
      throw new StoreError(`GitHub REST API: ${method} caches failed: ${(e as Error).message}`, e);
    }
    if (!res.ok && res.status !== 404)
      throw new StoreError(
        `GitHub REST API: ${method} ${repo} caches answered ${res.status}${res.status === 403 ? ` (the token needs permissions: actions: ${method === "GET" ? "read" : "write"})` : ""}: ${(await res.text()).slice(0, 200)}`,
      );
    return res;
  };
  return {
    async list(prefix: string): Promise<StoredObject[]> {
      const out: StoredObject[] = [];
      for (let page = 1; page < 1000; page++) {
        const res = await call(
          "GET",
          `?key=${encodeURIComponent(prefix)}&per_page=100&page=${page}&sort=created_at&direction=desc`,
        );
        const body = (await res.json()) as {
          actions_caches?: { key: string; size_in_bytes: number; created_at: string }[];
        };
        const got = body.actions_caches ?? [];
        for (const c of got)
          if (c.key.startsWith(prefix))
            out.push({
              name: c.key.slice("kcache/".length),
              size: c.size_in_bytes,
              modified: new Date(c.created_at),
            });
        if (got.length < 100) break;
      }
      return out.sort((a, b) => b.modified.getTime() - a.modified.getTime());
    },
    async delete(k: string): Promise<void> {
      await call("DELETE", `?key=${encodeURIComponent(k)}`);
    },
  };
}
