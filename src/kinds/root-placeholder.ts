/**
 * How torch.compile's cache entries name their folder when stored: the folder's path, where it is a
 * whole path, replaced by a placeholder, and back on restore. The same rules as
 * python/kcache_pickle/rewrite.py applies inside pickles (test/kinds/root-placeholder.test.ts holds
 * both to the same cases); here for text files (generated modules), byte for byte (a module that is
 * not UTF-8 keeps its bytes):
 *
 * - A root is replaced where it is a whole path: not preceded by a name character (a letter, a
 *   digit, `_`, `.`, `-` or a non-ASCII byte), and followed by `/`, a quote or the end of the file.
 *   A sibling folder `<root>_old` or a longer path ending in the root is left alone.
 * - Content that already holds the placeholder's prefix is escaped first, so it can never be read
 *   back as the placeholder; relocation writes the root for each placeholder and undoes the escape
 *   in one pass.
 */
export const MARK = "@@KCACHE_INDUCTOR_";
export const ROOT_PLACEHOLDER = `${MARK}CACHE_ROOT@@`;
const LITERAL = `${MARK}LITERAL@@`;

/** Bytes as a string of the same length (one char per byte), so a regex edits bytes exactly. */
const bytesOf = (s: string) => Buffer.from(s, "utf8").toString("latin1");
const literally = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** Whether `data` names any of `roots` or holds the placeholder's prefix: a rewrite has work to do. */
export function namesAny(data: Buffer, strings: string[]): boolean {
  return strings.some((s) => data.includes(s));
}

/** `data` with each of `roots` (its spellings) replaced by the placeholder where it is a whole path. */
export function normalizeText(data: Buffer, roots: string[]): Buffer {
  if (!namesAny(data, [...roots, MARK])) return data;
  const alternatives = roots
    .map(bytesOf)
    .sort((a, b) => b.length - a.length)
    .map(literally)
    .join("|");
  const pattern = new RegExp(
    `${literally(MARK)}|(?<![\\w.\\-\\x80-\\xff])(?:${alternatives})(?=[/'"]|$)`,
    "g",
  );
  const out = data.toString("latin1").replace(pattern, (m) => (m === MARK ? LITERAL : ROOT_PLACEHOLDER));
  return Buffer.from(out, "latin1");
}

/** `data` with the placeholder written as `root` and the escape undone. */
export function relocateText(data: Buffer, root: string): Buffer {
  if (!data.includes(MARK)) return data;
  const to = bytesOf(root);
  const out = data
    .toString("latin1")
    .replace(new RegExp(`${literally(MARK)}(CACHE_ROOT@@|LITERAL@@)`, "g"), (_m, what: string) =>
      what === "CACHE_ROOT@@" ? to : MARK,
    );
  return Buffer.from(out, "latin1");
}
