#!/usr/bin/env node
// Plants known bugs, one at a time, in a temporary copy of the working tree and runs the tests that
// stand for the promise each bug breaks. Every planted bug must make those tests fail: a bug that
// survives is a promise no test keeps. `npm run test:mutants`; CI runs it (.ci/run).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const isRoot = process.getuid?.() === 0;

/**
 * name, file, exact text (must occur once), its replacement, the tests that must catch it (`testName`:
 * only the tests whose names match it, for files that are slow as a whole); `also`:
 * more replacements planted with it, where a second line of defence would otherwise hide the bug
 * from every user (the bug is the pair).
 */
const MUTANTS = [
  {
    name: "Inductor's pickled graph entries stored naming the old folder",
    file: "src/kinds/pickle-rewriter.ts",
    find: "if (!namesAny(data, [...roots, MARK])) return null;",
    replace: "if (data.length >= 0) return null;",
    tests: ["test/kinds/inductor.test.ts"],
  },
  {
    name: "the pickle rewriter edits binaries (a cubin's debug section)",
    file: "python/kcache_pickle/rewrite.py",
    find: 'binary = name in BYTES_OPS and data.find(b"\\0", start, end) != -1',
    replace: "binary = False",
    tests: ["test/kinds/inductor.test.ts"],
  },
  {
    name: "the pickle rewriter replaces the folder inside a sibling's name (no path boundary)",
    file: "python/kcache_pickle/rewrite.py",
    find: `+ rb")(?=[/'\\"]|\\Z)"`,
    replace: '+ rb")"',
    tests: ["test/kinds/root-placeholder.test.ts"],
  },
  {
    name: "generated modules: the folder replaced inside a sibling's name (no path boundary)",
    file: "src/kinds/root-placeholder.ts",
    find: `(?:\${alternatives})(?=[/'"]|$)`,
    replace: "(?:${alternatives})",
    tests: ["test/kinds/root-placeholder.test.ts"],
  },
  {
    name: "the placeholder's prefix in a pickle's content not escaped (read back as the folder)",
    file: "python/kcache_pickle/rewrite.py",
    find: "lambda m: LITERAL if m.group(0) == MARK else PLACEHOLDER",
    replace: "lambda m: m.group(0) if m.group(0) == MARK else PLACEHOLDER",
    tests: ["test/kinds/root-placeholder.test.ts"],
  },
  {
    name: "a pickle that cannot be relocated placed anyway, holding the placeholder",
    file: "src/kinds/pickle-rewriter.ts",
    find: "if (!data.includes(MARK)) return null;",
    replace: "if (data.length >= 0) return null;",
    tests: ["test/kinds/inductor.test.ts", "test/kinds/pickle-rewriter.test.ts"],
  },
  {
    name: "pickles rewritten by python3 whatever stack.python says",
    file: "src/job/build-context.ts",
    find: "python: findOnPath(config.stack.python, env) ?? config.stack.python,",
    replace: 'python: "python3",',
    tests: ["test/kinds/pickle-rewriter.test.ts"],
  },
  {
    name: "Inductor's nested Triton group files not relocated",
    file: "src/kinds/inductor.ts",
    find: "return tritonKind.relocate(root, path.dirname(entryName), path.basename(entryName), data);",
    replace: "return data;",
    tests: ["test/kinds/inductor.test.ts"],
  },
  {
    name: "kind auto does not recognise an Inductor cache",
    file: "src/kinds/registry.ts",
    find: 'if (looksLikeInductorCache(visible)) return "inductor";',
    replace: "",
    tests: ["test/kinds/inductor.test.ts"],
  },
  {
    name: "Inductor's locks saved",
    file: "src/kinds/inductor.ts",
    find: 'if (e.name.startsWith("locks/") || /\\.lock$/.test(base)) result.lockFiles++;',
    replace: "if (false) result.lockFiles++;",
    tests: ["test/kinds/inductor.test.ts"],
  },
  {
    name: "expect: warm ignores torch.compile's graph-cache misses",
    file: "src/pipeline/stages/gate.ts",
    find: "const graphMisses = (kernels.graphs?.fxgraphMisses ?? 0) + (kernels.graphs?.aotMisses ?? 0);",
    replace: "const graphMisses = 0;",
    tests: ["test/pipeline/run-cli.test.ts"],
    testName: "torch.compile",
  },
  {
    name: "the GPU's compute capability not keyed",
    file: "src/stack/fingerprint.ts",
    find: 'set(probed, "cuda-arch", acc.computeCapabilities?.join(","));',
    replace: "",
    tests: ["test/stack/probe.test.ts"],
  },
  {
    name: "eviction's runs rule one save late",
    file: "src/cache/usage/eviction.ts",
    find: "now.generation - last.generation >= s.keepUnusedRuns",
    replace: "now.generation - last.generation > s.keepUnusedRuns",
    tests: ["test/cache/usage/eviction.test.ts"],
  },
  {
    name: "eviction's days rule never applies",
    file: "src/cache/usage/eviction.ts",
    find: 'if (s.keepUnusedDays > 0 && age >= s.keepUnusedDays * DAY_MS) return "days";',
    replace: "",
    tests: ["test/cache/usage/eviction.test.ts", "test/cache/usage/working-set.test.ts"],
    testName: "days",
  },
  {
    name: "save.max-bytes ignored",
    file: "src/cache/usage/eviction.ts",
    find: "if (settings.maxBytes === null) return out;",
    replace: "if (settings.maxBytes !== -1) return out;",
    tests: ["test/cache/usage/eviction.test.ts"],
  },
  {
    name: "the cap drops the most recently used first",
    file: "src/cache/usage/eviction.ts",
    find: "a.lastUsed.generation - b.lastUsed.generation ||",
    replace: "b.lastUsed.generation - a.lastUsed.generation ||",
    tests: ["test/cache/usage/eviction.test.ts"],
  },
  {
    name: "a restore does not stamp access times (use never learnt)",
    file: "src/cache/restore/restore-state.ts",
    find: "const e = stamp ? stampUnread(c.path, found) : found;",
    replace: "const e = found;",
    tests: ["test/cache/usage/working-set.test.ts"],
    testName: "with the defaults",
  },
  {
    name: "reads since the stamp ignored (live kernels evicted)",
    file: "src/cache/usage/save-usage.ts",
    find: "(byAtime && readSinceStamp(p.entry))",
    replace: "(byAtime && false)",
    tests: ["test/cache/usage/working-set.test.ts"],
    testName: "with the defaults",
  },
  {
    name: "a pull request's save evicts",
    file: "src/keys/scope.ts",
    find: 'return scope.startsWith("branch/") || scope.startsWith("tag/");',
    replace: "return true;",
    tests: ["test/cache/usage/working-set.test.ts"],
    testName: "pull request",
  },
  {
    name: "the noatime probe always says reads are recorded",
    file: "src/cache/usage/usage.ts",
    find: "return !isStamped(read.atimeMs, read.mtimeMs);",
    replace: "return true;",
    tests: ["test/cache/usage/working-set.test.ts"],
    testName: "noatime",
    needsRoot: true,
  },
  {
    name: "a --lookup-only restore leaves the last restore's stamps trusted",
    file: "src/cache/restore/restore.ts",
    find: "stamp: !report.lookupOnly,",
    replace: "stamp: true,",
    tests: ["test/cache/usage/working-set.test.ts"],
    testName: "lookup-only",
  },
  {
    name: "a prewarm that compiled nothing evicts",
    file: "src/cache/usage/save-usage.ts",
    find: 'if (evict === "if-new" && fresh === 0)',
    replace: "if (false)",
    tests: ["test/cache/usage/working-set.test.ts"],
    testName: "prewarm",
  },
  {
    name: "group files' child paths not rewritten on restore",
    file: "src/kinds/triton.ts",
    find: "childPaths[child] = path.join(root, entryName, path.basename(p));",
    replace: "childPaths[child] = p;",
    tests: ["test/kinds/relocation.test.ts"],
  },
  {
    name: "a delta save re-uploads reused entries",
    file: "src/cache/save/save-plan.ts",
    find: "const toPack = consolidate ? kept.filter((p) => !stay.includes(p)) : fresh;",
    replace: "const toPack = kept;",
    tests: ["test/cache/save/save.test.ts"],
  },
  {
    name: "a pull request writes the default branch's scope",
    file: "src/keys/run-identity.ts",
    find: "  if (prLike) {",
    replace: "  if (prLike && false) {",
    tests: ["test/keys/scope.test.ts", "test/keys/run-identity.test.ts"],
  },
  {
    name: "the per-entry sha256 check skipped",
    file: "src/pack/read/entry-stager.ts",
    find: "if (got !== w.sha256)",
    replace: "if (false)",
    tests: ["test/cache/integrity.test.ts"],
  },
  {
    name: "the whole-pack sha256 check skipped",
    file: "src/pack/read/pack-reader.ts",
    find: "else if (this.pack.sha256 !== null && got !== this.pack.sha256)",
    replace: "else if (false)",
    tests: ["test/pack/hostile-packs.test.ts"],
  },
  {
    name: "a save drops the entries a lazy restore left in the store and the job never fetched",
    file: "src/cache/lazy/carried-over.ts",
    find: "      if (onDisk.has(entryId({ cache: c.name, name }))) continue;",
    replace: "      if (onDisk.size >= 0) continue;",
    tests: ["test/cache/lazy/lazy-restore.test.ts"],
  },
  {
    name: "a lazy restore fetches nothing ahead (every entry waits for a lookup)",
    file: "src/cache/lazy/lazy-plan.ts",
    find: "for (const e of refs) (used(e) ? plan.prefetch : plan.deferred).push(e as FramedRef);",
    replace: "for (const e of refs) plan.deferred.push(e as FramedRef);",
    tests: ["test/cache/lazy/lazy-restore.test.ts"],
  },
  {
    name: "coverage ignores duplicated records",
    file: "src/checks/coverage.ts",
    find: "for (const [id, n] of counts) if (n > 1) duplicated.push",
    replace: "for (const [id, n] of counts) if (n > 1e9) duplicated.push",
    tests: ["test/checks/checks.test.ts"],
  },
  {
    name: "the restore-prefix fallback dropped",
    file: "src/keys/key.ts",
    find: 'for (const p of restorePrefixes) steps.push({ scope, match: "prefix", value: p });',
    replace: "",
    tests: ["test/keys/scope.test.ts"],
  },
  {
    name: "short writes on a full disk ignored (and staged entries not checked on disk before placing)",
    file: "src/pack/read/checked-write.ts",
    find: "    off += n;",
    replace: "    off = data.length;",
    also: [
      {
        file: "src/pack/read/entry-stager.ts",
        find: "if (!reason) reason = this.stagedDiffers();",
        replace: "",
      },
    ],
    tests: ["test/cache/full-disk.test.ts"],
    needsRoot: true,
  },
  {
    name: "members not bounded by the manifest's entry size",
    file: "src/pack/read/entry-stager.ts",
    find: "if (this.digest.size + size > this.wanted.size || this.digest.files + 1 > this.wanted.files) {",
    replace: "if (false) {",
    tests: ["test/pack/hostile-packs.test.ts"],
  },
  {
    name: "a pack's decompressed bytes not bounded",
    file: "src/pack/read/pack-reader.ts",
    find: "if (this.tarBytes > this.tarLimit) {",
    replace: "if (false) {",
    tests: ["test/pack/hostile-packs.test.ts"],
  },
  {
    name: "restored files left open (open files not bounded)",
    file: "src/pack/read/entry-stager.ts",
    find: "      end: () => this.closeFile(),",
    replace: "      end: () => {},",
    tests: ["test/pack/limits-and-inputs.test.ts"],
  },
  {
    name: "a dir cache writes through a symlink in the cache folder",
    file: "src/pack/read/entry-stager.ts",
    find: 'ensureRealDirs(root, path.posix.dirname(entryName) === "." ? "" : path.posix.dirname(entryName));',
    replace: "fs.mkdirSync(path.dirname(path.join(root, entryName)), { recursive: true });",
    tests: ["test/pack/hostile-packs.test.ts"],
  },
  {
    name: "--strict ignores data faults on restore",
    file: "src/cache/restore/restore.ts",
    find: "const failing = report.faults.filter((f) => ctx.strict.fails(f.code));",
    replace: "const failing: typeof report.faults = [];",
    tests: ["test/pack/limits-and-inputs.test.ts"],
  },
  {
    name: "no idle timeout on S3 bodies",
    file: "src/store/s3-bucket.ts",
    find: "return withIdleTimeout(whole, settings.idleTimeoutMs, what);",
    replace: "return whole;",
    tests: ["test/store/s3-failures.test.ts"],
  },
  {
    name: "a save relies on packs prune condemned",
    file: "src/cache/save/save.ts",
    find: "const unusable = await unusablePacks(store, reusedPacks);",
    replace: "const unusable = new Set<string>();",
    tests: ["test/cache/usage/prune-race.test.ts"],
  },
  {
    name: "prune ignores leases of saves in flight",
    file: "src/cache/usage/prune.ts",
    find: "if (referenced.has(p.name) || leased(leases.live, p.name)) continue;",
    replace: "if (referenced.has(p.name)) continue;",
    tests: ["test/cache/usage/prune-race.test.ts"],
  },
  {
    name: "a persistent folder's unverified entries uploaded by the default branch's save",
    file: "src/cache/save/save-scan.ts",
    find: "if (vouched.has(p) || trusted.has(p.cache) || before === undefined || before !== p.sig) out.push(p);",
    replace:
      "if (vouched.has(p) || trusted.has(p.cache) || before === undefined || before !== p.sig || p.size >= 0) out.push(p);",
    tests: ["test/keys/scope-events.test.ts"],
  },
  {
    name: "a GitLab merge request taken for the branch it names",
    file: "src/keys/ci-systems.ts",
    find: "const mr = !!(id || env.CI_MERGE_REQUEST_ID || prSource);",
    replace: "const mr = false;",
    tests: ["test/keys/run-identity.test.ts"],
  },
  {
    name: "a build kcache cannot place writes the default branch's scope",
    file: "src/keys/scope.ts",
    find: "const write = `untrusted/${ref.name}`;",
    replace: "const write = def;",
    tests: ["test/keys/run-identity.test.ts"],
  },
  {
    name: "a default-branch save beside a pull request's job takes every new entry as its own",
    file: "src/cache/save/save-attribution.ts",
    find: "  if (beside.size === 0) return kept;",
    replace: "  if (beside.size >= 0) return kept;",
    tests: ["test/cache/persistent/beside-untrusted.test.ts"],
  },
  {
    name: "the hook's record of what the job wrote ignored (every entry beside an untrusted job counts as the job's)",
    file: "src/cache/save/save-attribution.ts",
    find: "wrote.has(presentId(p))",
    replace: "true",
    tests: ["test/cache/persistent/beside-untrusted.test.ts"],
  },
  {
    name: "an untrusted job's marker removed when it ends",
    file: "src/cache/persistent/live-jobs.ts",
    find: "  if (job.trusted) fs.rmSync(file, { force: true });",
    replace: "  if (job.trusted || true) fs.rmSync(file, { force: true });",
    tests: ["test/cache/persistent/beside-untrusted.test.ts"],
  },
  {
    name: "a save's torch.compile pickles rewritten one process each, not together before packing",
    file: "src/cache/save/save-packs.ts",
    find: "  forms.prepare(groups.flat());",
    replace: "",
    tests: ["test/kinds/inductor.test.ts"],
    testName: "one Python process",
  },
  {
    name: "autotune: fresh serves one process the winners another tuned",
    file: "python/kcache_hook/sitecustomize.py",
    find: 'fresh = os.environ.get("KCACHE_AUTOTUNE") == "fresh"',
    replace: "fresh = False",
    tests: ["test/pipeline/autotune-sides.test.ts"],
  },
  {
    name: "zstd-napi: an empty call after a frame that filled the buffer undoes its end",
    file: "src/pack/zstd/chunk-codecs.ts",
    find: "if (consumed > 0 || produced > 0) this.hint = hint;",
    replace: "this.hint = hint;",
    tests: ["test/pack/zstd-boundaries.test.ts"],
  },
  {
    name: "the event payload ignored",
    file: "src/keys/run-identity.ts",
    find: "const facts = eventFacts(env);",
    replace: "const facts = { pr: null, untrusted: false, base: null, fork: false, defaultBranch: null };",
    tests: ["test/keys/scope-events.test.ts"],
  },
  {
    name: "a garbage manifest taken for 'the key exists'",
    file: "src/cache/save/save-manifest.ts",
    find: "    if (!(e instanceof IntegrityError)) throw e;\n    throw new IntegrityError(\n      `${store.description}: ${e.message}; nothing saved",
    replace:
      "    if (!(e instanceof IntegrityError)) throw e;\n    if (Math.random() >= 0) return { packs: [] } as unknown as Manifest;\n    throw new IntegrityError(\n      `${store.description}: ${e.message}; nothing saved",
    tests: ["test/store/s3-failures.test.ts"],
  },
  {
    name: "killed saves' temporary files never reaped",
    file: "src/store/local.ts",
    find: "if (gone && !ours) {",
    replace: "if (false) {",
    tests: ["test/cache/usage/prune-race.test.ts"],
  },
  {
    name: "the action's default mode never saves in its post step",
    file: "src/github/action.ts",
    find: 'core.saveState(State.saveInPost, "true");',
    replace: "",
    tests: ["test/github/action.test.ts"],
  },
  {
    name: "save-always is not handed to the post step's condition",
    file: "src/github/action.ts",
    find: 'if (flag(Inputs.saveAlways)) core.exportVariable(SAVE_ALWAYS_ENV, "true");',
    replace: "",
    tests: ["test/github/action.test.ts"],
  },
  {
    name: "path exclusions (! lines) are ignored",
    file: "src/cache/cache-folder.ts",
    find: "!ancestors.some((a) => excluded(path.join(folder.path, a)))",
    replace: "true",
    tests: ["test/github/action.test.ts"],
  },
  {
    name: "a restore step's cache-primary-key passed to save/ gets the stack and revision twice",
    file: "src/job/build-context.ts",
    find: "key.endsWith(tail) ? /^(.+)-([0-9a-f]{12})$/.exec(key.slice(0, -tail.length)) : null",
    replace: "null",
    tests: ["test/github/action.test.ts"],
  },
  {
    name: "an action with no store named does not use GitHub's cache service",
    file: "src/config/store-config.ts",
    find: "if (!text && ghaEnvironment(env).offered) return",
    replace: "if (false) return",
    tests: ["test/github/action.test.ts"],
  },
  {
    name: "allclose ignores max-norm-error",
    file: "src/checks/allclose.ts",
    find: "if (maxNorm !== undefined && !(normError <= maxNorm)) {",
    replace: "if (false) {",
    tests: ["test/checks/checks.test.ts"],
  },
  {
    name: "Triton-Ascend's precompiled header (.gch) is saved and restored",
    file: "src/kinds/triton.ts",
    find: "        if (MACHINE_LOCAL.test(f.name)) {",
    replace: "        if (MACHINE_LOCAL.test(f.name) && false) {",
    tests: ["test/kinds/triton-entry-names.test.ts"],
  },
  {
    name: "without a listener, compiles are not counted from the cache folder",
    file: "src/pipeline/stages/command-kernels.ts",
    find: "      compiled: folder.compiled,\n      compileSeconds: null,",
    replace: "      compiled: 0,\n      compileSeconds: null,",
    tests: ["test/telemetry/folder-count.test.ts"],
  },
  {
    name: "the driver version is keyed",
    file: "src/stack/fingerprint.ts",
    find: 'set(info, "driver", acc.driver);',
    replace: 'set(probed, "driver", acc.driver);',
    tests: ["test/stack/probe.test.ts", "test/stack/ascend-probe.test.ts"],
  },
  {
    name: "a profile's source: scripts are not sourced before the stack probe and the commands",
    file: "src/job/build-job.ts",
    find: "env = await sourcedEnv(",
    replace: "await sourcedEnv(",
    tests: ["test/process/source-env.test.ts"],
  },
  {
    name: "the values check accepts any value",
    file: "src/checks/values.ts",
    find: "      if (!ok.includes(got)) {",
    replace: "      if (false) {",
    tests: ["test/examples/fla-kda.test.ts"],
  },
  {
    name: "--utc shifts the day of week the wrong way",
    file: "src/github/schedule.ts",
    find: "dayOfWeek.values.map((d) => (((d + shift) % 7) + 7) % 7),",
    replace: "dayOfWeek.values.map((d) => (((d - shift) % 7) + 7) % 7),",
    tests: ["test/github/schedule.test.ts"],
  },
  {
    name: "a save with nothing new records no key",
    file: "src/cache/save/save.ts",
    find: "if (!replacing && parent && parent.key === ctx.key && this.fresh().length === 0 && this.unchanged()) {",
    replace: "if (!replacing && parent && this.fresh().length === 0 && this.unchanged()) {",
    tests: ["test/pipeline/prewarm.test.ts", "test/cache/save/save.test.ts"],
  },
  {
    name: "a key whose pack GitHub evicted is restored in part",
    file: "src/cache/lookup.ts",
    find: "          if (gone.length) {",
    replace: "          if (false) {",
    tests: ["test/store/gha-service.test.ts"],
  },
  {
    name: "prewarm runs on a pull request's event",
    file: "src/pipeline/prewarm.ts",
    find: "if (ctx.scopes.write !== defaultScope) {",
    replace: "if (false) {",
    tests: ["test/pipeline/prewarm.test.ts"],
  },
  {
    name: "consolidation rewrites large live packs (the store grows 8x over 100 commits)",
    file: "src/cache/save/save-plan.ts",
    find: "if (pack && pack.entryBytes >= large && bytes / pack.entryBytes >= 1 - settings.maxDeadShare)",
    replace:
      "if (pack && pack.entryBytes >= large && bytes / pack.entryBytes >= 1 - settings.maxDeadShare && false)",
    tests: ["test/cache/storage-growth.test.ts"],
  },
  {
    name: "kcache stats counts pull requests' runs as the default branch's",
    file: "src/cli/commands/stats.ts",
    find: "(o.allScopes || r.scope === defaultScope) &&",
    replace: "(true || r.scope === defaultScope) &&",
    tests: ["test/history/stats.test.ts"],
  },
  {
    name: "a restore judges another PID namespace's staging folder by its PID (deletes a live one)",
    file: "src/pack/read/staging-owner.ts",
    find: "if (owner.where === pidNamespace())",
    replace: "if (true)",
    tests: ["test/pack/staging-owner.test.ts"],
  },
  {
    name: "a manifest listing an entry twice is accepted (restored and counted twice)",
    file: "src/manifest/manifest.ts",
    find: "if (seen.has(id)) throw",
    replace: "if (false) throw",
    tests: ["test/cache/integrity.test.ts"],
  },
  {
    name: "a manifest whose body names another key is restored as this one",
    file: "src/cache/lookup.ts",
    find: "if (where && (where.key !== manifest.key || where.scope !== manifest.scope))",
    replace: "if (false)",
    tests: ["test/cache/integrity.test.ts"],
  },
  {
    name: "entries whole on disk are reported as failed when their pack could not be read",
    file: "src/cache/restore/restore-outcomes.ts",
    find: "const onDisk = await verifiedOnDisk(missing, targets, folders);",
    replace: "const onDisk = new Set<string>();",
    tests: ["test/cache/integrity.test.ts"],
  },
  {
    name: "a stalled store is tried again for every pack",
    file: "src/store/stall-latch.ts",
    find: "if (stalled) throw new StalledError(`${stalled.message}; not tried again in this command`);",
    replace: "",
    tests: ["test/store/stall-latch.test.ts"],
  },
  {
    name: "a stack with no torch or triton keys silently",
    file: "src/stack/fingerprint.ts",
    find: "if (py && Object.keys(py.packages).length === 0) {",
    replace: "if (false) {",
    tests: ["test/cli/cli.test.ts"],
  },
  {
    name: "a missing Zstandard engine is found per pack, not before the restore",
    file: "src/cache/restore/restore-place.ts",
    find: "if (match.manifest.entries.length > 0) await zstdEngine(work.runtime.zstd);",
    replace: "",
    tests: ["test/cache/zstd-engines.test.ts"],
  },
  {
    name: "a history baseline reads the run's own scope instead of the default branch's",
    file: "src/history/baseline.ts",
    find: "const scope = defaultBranchScope(ctx.scopes.defaultBranch);",
    replace: "const scope = ctx.scopes.write;",
    tests: ["test/history/baseline.test.ts"],
  },
  {
    name: "--strict with codes fails on every fault",
    file: "src/cache/faults.ts",
    find: 'return this.codes === "all" || (this.codes !== "none" && this.codes.has(code));',
    replace: 'return this.codes !== "none";',
    tests: ["test/cli/strict-codes.test.ts"],
  },
  {
    name: "faults met lose their codes (every restore fault reported as pack-unreadable)",
    file: "src/cache/lookup.ts",
    find: 'faults?.push(fault("manifest-damaged", e.message));',
    replace: 'faults?.push(fault("pack-unreadable", e.message));',
    tests: ["test/cache/integrity.test.ts", "test/cli/strict-codes.test.ts"],
  },
  {
    name: "$KCACHE_THREADS not read into the job",
    file: "src/environment.ts",
    find: "threads: Number.isInteger(asked) && asked > 0 ? asked : null,",
    replace: "threads: null,",
    tests: ["test/github/action.test.ts"],
  },
  {
    name: "a restore does not find entries already in a kept folder by their digest (downloads and rewrites them)",
    file: "src/cache/restore/restore-state.ts",
    find: "else if (kind.incompleteReason(root, found) === null && hashOf(kind, root, found, name) === e.sha256)",
    replace: 'else if (found.name === "never an entry")',
    tests: ["test/cache/persistent/never-colder.test.ts"],
  },
  {
    name: "an isolated pull request's folder merged into the runner's",
    file: "src/cache/persistent/settle.ts",
    find: 'return scope === defaultBranchScope(ctx.scopes.defaultBranch) || scope.startsWith("tag/");',
    replace: "return scope.length > 0;",
    tests: ["test/cache/persistent/isolate.test.ts"],
  },
  {
    name: "trim removes what the job that just ended used",
    file: "src/cache/persistent/trim-plan.ts",
    find: "const removable = (c: TrimCandidate) => !c.usedByThisJob && !c.otherJobMayRead;",
    replace: "const removable = (c: TrimCandidate) => !c.otherJobMayRead;",
    tests: ["test/cache/persistent/trim.test.ts"],
  },
  {
    name: "trim ignores jobs still running in the folder",
    file: "src/cache/persistent/trim-plan.ts",
    find: "const removable = (c: TrimCandidate) => !c.usedByThisJob && !c.otherJobMayRead;",
    replace: "const removable = (c: TrimCandidate) => !c.usedByThisJob;",
    tests: ["test/cache/persistent/trim.test.ts"],
  },
  {
    name: "a test job's autotune result given to a benchmark profile",
    file: "src/cache/autotune/policy.ts",
    find: 'if (!tuning.benchmark) return "not-a-benchmark";',
    replace: "",
    tests: ["test/cache/autotune/policy.test.ts"],
  },
  {
    name: "autotune producers lost in a delta save",
    file: "src/cache/autotune/provenance.ts",
    find: "if (t) e.tunedBy = idOf(withoutId(t));",
    replace: "if (t) e.tunedBy = idOf(parts.producer);",
    tests: ["test/cache/autotune/policy.test.ts"],
  },
  {
    name: "entries borrowed from restore-revisions saved under the pull request's key",
    file: "src/cache/save/save-scan.ts",
    find: "if (borrowed !== undefined && borrowed === p.sig && !vouched.has(p)) {",
    replace: 'if (borrowed === "never an entry") {',
    tests: ["test/cache/autotune/other-revisions.test.ts"],
  },
  {
    name: "a manifest's autotune producer taken without being listed",
    file: "src/manifest/manifest.ts",
    find: "if (e.tunedBy !== undefined && !tunings.has(e.tunedBy))",
    replace: "if (e.tunedBy === -1)",
    tests: ["test/manifest/manifest.test.ts"],
  },
  {
    name: "an autotune salt never checked",
    file: "src/cache/autotune/policy.ts",
    find: 'if (settings.salt !== "none" && !saltHolds) return "changed-salt";',
    replace: "",
    tests: ["test/pipeline/benchmark-profile.test.ts"],
  },
  {
    name: "a reset pack download resumed from the start (bytes received twice)",
    file: "src/store/resumable-download.ts",
    find: "this.opts.reopen(this.offset, this.part.etag)",
    replace: "this.opts.reopen(0, this.part.etag)",
    tests: ["test/store/s3-failures.test.ts"],
  },
  {
    name: "a reset pack download never resumed",
    file: "src/store/resumable-download.ts",
    find: "if (!resumable || this.resumes >= this.opts.attempts",
    replace: "if (!resumable || this.resumes >= 0",
    tests: ["test/store/s3-failures.test.ts"],
  },
  {
    name: "a zstd frame's window taken as it declares (1 GiB read by fzstd)",
    file: "src/pack/zstd/frame-guard.ts",
    find: "if (window > MAX_WINDOW_BYTES)",
    replace: "if (window > 2 ** 31)",
    tests: ["test/pack/zstd-frames.test.ts"],
  },
  {
    name: "the WebAssembly engine's content checksums never compared",
    file: "src/pack/zstd/portable.ts",
    find: "if (checksum !== null && Number(",
    replace: "if (checksum === -1 && Number(",
    tests: ["test/pack/zstd-frames.test.ts"],
  },
  {
    name: "bytes after a pack's last zstd frame ignored",
    file: "src/pack/zstd/frame-guard.ts",
    find: "        if (magic !== FRAME_MAGIC)",
    replace:
      '        if (this.frames > 0 && magic !== FRAME_MAGIC) {\n          this.field = "trailer" as Field;\n          this.need = Number.MAX_SAFE_INTEGER;\n          return;\n        }\n        if (magic !== FRAME_MAGIC)',
    tests: ["test/pack/zstd-frames.test.ts"],
  },
  {
    name: "the zstd binary's stream read without the frame checks",
    file: "src/pack/zstd/engines.ts",
    find: 'guardedStream(processDuplex("zstd", ["-d", "-q", "-c"]))',
    replace: 'processDuplex("zstd", ["-d", "-q", "-c"])',
    tests: ["test/pack/zstd-frames.test.ts"],
  },
  {
    name: "a resolved key passed back re-keyed by this machine's stack (the stack id appended twice)",
    file: "src/job/build-context.ts",
    find: "const keyStack = named?.[2] ?? null;",
    replace: "const keyStack = named?.[2] === stackId ? stackId : null;",
    tests: ["test/github/action.test.ts"],
    testName: "before the install",
  },
  {
    name: "an S3 connection reset before any answer never retried",
    file: "src/store/retry-strategy.ts",
    find: '|| info.errorType === "THROTTLING" || wasReset(info.error)',
    replace: '|| info.errorType === "THROTTLING"',
    tests: ["test/store/s3-failures.test.ts"],
    testName: "keep-alive",
  },
  {
    name: "a key whose pack was evicted taken as whole (never saved again)",
    file: "src/cache/key-wholeness.ts",
    find: 'return gone.length ? { state: "broken", manifest, gone } : { state: "whole", manifest };',
    replace: 'return { state: "whole", manifest };',
    tests: ["test/cache/broken-key.test.ts", "test/pipeline/prewarm.test.ts"],
  },
  {
    name: "a misspelt config key reported without the setting it meant",
    file: "src/config/config-issues.ts",
    find: "let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;",
    replace: "let bestDistance = 0;",
    tests: ["test/config/load.test.ts"],
  },
  {
    name: "a drop-in save leaves no run record (kcache stats empty for actions/cache users)",
    file: "src/pipeline/drop-in-save.ts",
    find: "if (report) await writeRunRecord(dropInRunRecord(ctx, job, report), ctx);",
    replace: "if (report && ctx.key === '') await writeRunRecord(dropInRunRecord(ctx, job, report), ctx);",
    tests: ["test/history/drop-in-stats.test.ts"],
  },
  {
    name: "one kernel's cost taken as the jobs' whole seconds per new kernel (fixed work counted as compiling)",
    file: "src/history/time-saved.ts",
    find: 'if (s !== null && s > 0) return { seconds: s, from: "job-times" };',
    replace: "",
    tests: ["test/history/drop-in-stats.test.ts"],
  },
  {
    name: "the prewarm races the default branch's job (a group of its own)",
    file: "src/github/workflows.ts",
    find: "concurrency: this.concurrency(`refs/heads/${this.defaultBranch}`, false),",
    replace: 'concurrency: { group: `kcache-prewarm-${profileName}`, "cancel-in-progress": false },',
    tests: ["test/github/workflows.test.ts"],
  },
  {
    name: "packed refs not read (a clone's branch commit missed)",
    file: "src/keys/git-refs.ts",
    find: "      text = this.packed(ref);",
    replace: "      text = null;",
    tests: ["test/keys/git-refs.test.ts"],
  },
  {
    name: "kcache run without bash fails every command instead of running them with sh",
    file: "src/process/shell.ts",
    find: 'return has("bash") ? "bash" : has("sh") ? "sh" : null;',
    replace: 'return has("bash") ? "bash" : null;',
    tests: ["test/pipeline/run-shell.test.ts", "test/process/run-command.test.ts"],
  },
  {
    name: "a kept kcache.yml answer reused after the file was edited (the digest leaves out the text)",
    file: "src/config/validated-config.ts",
    find: '.update(`${build()}\\0${file ?? "(defaults)"}\\0${text ?? "(defaults)"}`)',
    replace: '.update(`${build()}\\0${file ?? "(defaults)"}`)',
    tests: ["test/config/validated-config.test.ts"],
  },
  {
    name: "nvidia-smi's kept answer reused after the driver changed",
    file: "src/stack/accelerator-probe.ts",
    find: "const cache = seen === undefined ? null : capabilityCache(env, smi, seen);",
    replace: 'const cache = seen === undefined ? null : capabilityCache(env, smi, "");',
    tests: ["test/stack/probe.test.ts"],
  },
  {
    name: "the restore command reads the local state again to find the job's folders",
    file: "src/cli/commands/restore.ts",
    find: "exportJobFolders(restoredContext(ctx, report), ctx, log);",
    replace: "exportJobFolders(restoredContext(ctx, null), ctx, log);",
    tests: ["test/cache/local-state-io.test.ts"],
  },
  {
    name: "a restore's pickles never rewritten (the entries waiting for them are never placed)",
    file: "src/pack/read/entry-stager.ts",
    find: "if (!reason && later.waits(this)) return WAITING;",
    replace: "if (!reason && later.waits(this)) later.drop(this);",
    tests: ["test/kinds/pickle-rewriter.test.ts"],
  },
  {
    name: "the pickle rewriter drops the unchanged bytes after the last rewritten value",
    file: "python/kcache_pickle/rewrite.py",
    find: "    copy_to(len(data))\n",
    replace: "\n",
    tests: ["test/kinds/inductor.test.ts"],
  },
];

/** The working tree's files (tracked and new, not ignored), copied into a fresh folder. */
function copyTree() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-mutant-"));
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: ROOT })
    .toString()
    .split("\0")
    .filter(Boolean);
  for (const f of files) {
    const from = path.join(ROOT, f);
    if (!fs.existsSync(from) || fs.lstatSync(from).isDirectory()) continue;
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, f));
  }
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

function runTests(dir, tests, testName) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, "node_modules/vitest/vitest.mjs"),
        "run",
        "--reporter=dot",
        ...(testName ? ["-t", testName] : []),
        ...tests,
      ],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true", NO_COLOR: "1" } },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => resolve({ code, out }));
  });
}

async function one(m) {
  if (m.needsRoot && !isRoot) return { ...m, verdict: "not run (needs root for a tmpfs)" };
  const dir = copyTree();
  try {
    const file = path.join(dir, m.file);
    const text = fs.readFileSync(file, "utf8");
    const at = text.indexOf(m.find);
    if (at < 0 || text.indexOf(m.find, at + 1) >= 0)
      return {
        ...m,
        verdict: `does not apply: the text is not in ${m.file} exactly once; update scripts/mutants.mjs`,
      };
    fs.writeFileSync(file, text.replace(m.find, m.replace));
    for (const extra of m.also ?? []) {
      const f = path.join(dir, extra.file);
      const t = fs.readFileSync(f, "utf8");
      if (t.split(extra.find).length !== 2)
        return {
          ...m,
          verdict: `does not apply: the text is not in ${extra.file} exactly once; update scripts/mutants.mjs`,
        };
      fs.writeFileSync(f, t.replace(extra.find, extra.replace));
    }
    const t0 = Date.now();
    const r = await runTests(dir, m.tests, m.testName);
    const seconds = ((Date.now() - t0) / 1000).toFixed(0);
    // Caught means a test failed on it: a mutant that breaks the build or the setup proves nothing.
    const failed = /Tests\s+\d+ failed/.test(r.out);
    const verdict =
      r.code === 0
        ? `SURVIVED (${seconds} s)`
        : failed
          ? `caught (${seconds} s)`
          : `BROKE THE SETUP (${seconds} s)`;
    return { ...m, verdict, out: r.out };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const only = process.argv.slice(2);
const todo = only.length ? MUTANTS.filter((m) => only.some((o) => m.name.includes(o))) : MUTANTS;
const results = [];
let next = 0;
const workers = Number(process.env.KCACHE_MUTANT_JOBS ?? 2);
await Promise.all(
  Array.from({ length: workers }, async () => {
    while (next < todo.length) {
      const m = todo[next++];
      const r = await one(m);
      process.stdout.write(`${r.verdict.padEnd(24)} ${m.name}\n`);
      results.push(r);
    }
  }),
);
const bad = results.filter((r) => !r.verdict.startsWith("caught") && !r.verdict.startsWith("not run"));
process.stdout.write(
  `\n${results.length - bad.length} of ${results.length} planted bugs caught or not applicable here\n`,
);
for (const r of bad) {
  process.stdout.write(`\n${r.verdict}: ${r.name} (${r.file}; tests ${r.tests.join(" ")})\n`);
  if (r.out) process.stdout.write(`${r.out.split("\n").slice(-15).join("\n")}\n`);
}
process.exitCode = bad.length ? 1 : 0;
