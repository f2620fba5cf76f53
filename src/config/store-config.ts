import os from "node:os";
import path from "node:path";
import { ghaEnvironment, s3Environment } from "../environment.js";
import { ConfigError } from "../errors.js";
import { parseDuration } from "./durations.js";
import type { StoreSpec } from "./schema.js";

/** Where packs and manifests are kept, resolved from kcache.yml or the environment. */
export type StoreConfig =
  | { type: "local"; path: string; live?: boolean; readOnly?: boolean }
  | {
      type: "s3";
      bucket: string;
      prefix: string;
      region: string;
      endpoint: string | undefined;
      /** Settings left unset take the backend's defaults (DEFAULT_S3 in store/s3-settings.ts, merged by its s3Settings). */
      pathStyle?: boolean;
      conditionalWrites?: "auto" | "always" | "never";
      checksums?: "when-supported" | "when-required";
      connectTimeoutMs?: number;
      idleTimeoutMs?: number;
      retries?: number;
      /** Entries shared as the job compiles them (cache/lazy/live-writer.ts). */
      live?: boolean;
      /** store.read-only: restore, never write (store/read-only.ts). */
      readOnly?: boolean;
    }
  | { type: "gha"; timeoutMs?: number; idleTimeoutMs?: number; readOnly?: boolean };

/**
 * The store: kcache.yml's `store:` when it has one (an explicit --store or `store` input replaces it
 * before this is called), else $KCACHE_STORE (a folder, `s3://bucket/prefix` or `gha`), else GitHub's
 * cache service inside an action (the runner gives it ACTIONS_RUNTIME_TOKEN), else ~/.cache/kcache. S3 settings the URL cannot carry come from $KCACHE_S3_ENDPOINT,
 * $KCACHE_S3_PATH_STYLE, $KCACHE_S3_REGION (or $AWS_REGION); credentials from the standard AWS chain.
 */
export function resolveStore(
  spec: StoreSpec | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
  expand: (value: string, field: string) => string,
): StoreConfig {
  if (spec?.type === undefined) return storeFromText(env.KCACHE_STORE, "KCACHE_STORE", env, cwd);
  const ms = (v: string | undefined) => (v === undefined ? undefined : (parseDuration(v) as number));
  if (spec?.type === "local") {
    if (spec.path) refuseMistypedUrl(expand(spec.path, "store.path"), "store.path");
    return {
      type: "local",
      path: path.resolve(cwd, spec.path ? expand(spec.path, "store.path") : defaultLocal(env)),
      live: spec.live,
      readOnly: spec["read-only"],
    };
  }
  if (spec?.type === "s3") {
    return {
      type: "s3",
      bucket: expand(spec.bucket, "store.bucket"),
      prefix: normalisePrefix(expand(spec.prefix, "store.prefix")),
      region: spec.region ? expand(spec.region, "store.region") : s3Environment(env).region,
      endpoint: checkedUrl(
        spec.endpoint ? expand(spec.endpoint, "store.endpoint") : s3Environment(env).endpoint,
        spec.endpoint ? "store.endpoint" : "$KCACHE_S3_ENDPOINT",
      ),
      pathStyle: spec["path-style"],
      conditionalWrites: spec["conditional-writes"],
      checksums: spec.checksums,
      connectTimeoutMs: ms(spec["connect-timeout"]),
      idleTimeoutMs: ms(spec["idle-timeout"]),
      retries: spec.retries,
      live: spec.live,
      readOnly: spec["read-only"],
    };
  }
  if (spec.live)
    throw new ConfigError(
      "store.live: GitHub's cache service takes at most 200 uploads a minute per repository, and live sharing uploads every entry as the job compiles it; remove live: true, or use an S3-compatible store for live sharing (docs/stores.md)",
    );
  return {
    type: "gha",
    timeoutMs: ms(spec.timeout),
    idleTimeoutMs: ms(spec["idle-timeout"]),
    readOnly: spec["read-only"],
  };
}

/**
 * A store written as one word: `gha`, `s3://bucket/prefix` or a folder (the default folder when
 * empty), as $KCACHE_STORE, the CLI's --store and the action's `store` input give it. `label` names
 * where it came from in errors.
 */
export function storeFromText(
  text: string | undefined,
  label: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): StoreConfig {
  if (text === "gha") return { type: "gha" };
  refuseMistypedUrl(text, label);
  // A URL's scheme is case-insensitive (RFC 3986): S3:// is s3://. Any other scheme is an error, never
  // a folder named after it (`gs://b/p` once saved into ./gs:/b/p).
  const scheme = text ? /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(text)?.[1] : undefined;
  if (scheme !== undefined && scheme.toLowerCase() !== "s3")
    throw new ConfigError(
      `${label}=${text}: kcache has no ${scheme}:// store; write s3://bucket/prefix (any S3-compatible service, with KCACHE_S3_ENDPOINT), gha, or a folder`,
    );
  if (text && scheme !== undefined) {
    const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(text);
    if (!m?.[1]) throw new ConfigError(`${label}=${text}: write s3://bucket or s3://bucket/prefix`);
    const { region, endpoint, pathStyle, checksums } = s3Environment(env);
    return {
      type: "s3",
      bucket: m[1],
      prefix: normalisePrefix(m[2] ?? ""),
      region,
      endpoint,
      pathStyle,
      checksums,
    };
  }
  // In a GitHub Action the runner hands its cache service to the step (as it does to actions/cache):
  // with no store named anywhere, that is where caches go, so switching `uses:` is all a user does.
  if (!text && ghaEnvironment(env).offered) return { type: "gha" };
  return { type: "local", path: path.resolve(cwd, text || defaultLocal(env)) };
}

/**
 * A store URL mistyped (s3:/bucket, s3//bucket, s3:bucket, s3:///bucket) is an error naming the fix,
 * never a folder named after it that every save fills while the shared store stays empty.
 */
function refuseMistypedUrl(text: string | undefined, label: string): void {
  const typo = text ? /^([A-Za-z][A-Za-z0-9+.-]*)(:\/?(?!\/)|\/\/|:\/{3,})(.*)$/.exec(text) : null;
  if (typo && /^(s3|gs|gcs|https?|az|abfss?|oss|obs|cos|r2|minio)$/i.test(typo[1] as string))
    throw new ConfigError(
      `${label}=${text}: not a store URL; write s3://${(typo[3] as string).replace(/^\/+/, "") || "bucket/prefix"} (two slashes after "s3:"), gha, or a folder (./${text} for a folder of that name)`,
    );
}

function defaultLocal(env: NodeJS.ProcessEnv): string {
  return path.join(env.HOME || os.homedir(), ".cache", "kcache");
}

/** "ci/kcache" and "ci/kcache/" both mean objects under ci/kcache/. */
function normalisePrefix(p: string): string {
  return p && !p.endsWith("/") ? `${p}/` : p;
}

/** An endpoint as given, once it parses as an http(s) URL; ConfigError naming the field otherwise. */
function checkedUrl(value: string | undefined, field: string): string | undefined {
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${field}: "${value}" is not a URL; write it as https://host[:port]`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ConfigError(`${field}: "${value}" is not an http(s) URL; write it as https://host[:port]`);
  return value;
}
