/**
 * A small JSON Schema (draft-07) check for the keywords zod's z.toJSONSchema writes for kcache.yml;
 * a keyword it does not know fails the check, so a schema that grows one cannot pass unread. Returns
 * the problems as "path: what", none when `value` fits.
 */
type Node = Record<string, unknown>;

const ANNOTATIONS = new Set(["$schema", "$id", "title", "description", "default"]);

export function schemaProblems(schema: unknown, value: unknown, at = "(top level)"): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${at}: not allowed`];
  const s = schema as Node;
  const out: string[] = [];
  for (const [k, v] of Object.entries(s)) {
    if (ANNOTATIONS.has(k)) continue;
    const check = KEYWORDS[k];
    if (!check) throw new Error(`${at}: the schema check does not know the keyword ${k}`);
    out.push(...check(v, value, at, s));
  }
  return out;
}

const isObject = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);
const typeOf = (v: unknown): string[] =>
  v === null
    ? ["null"]
    : Array.isArray(v)
      ? ["array"]
      : typeof v === "number"
        ? Number.isInteger(v)
          ? ["number", "integer"]
          : ["number"]
        : [typeof v];
const matching = (options: unknown[], value: unknown, at: string) =>
  options.filter((o) => schemaProblems(o, value, at).length === 0).length;

const KEYWORDS: Record<string, (v: unknown, value: unknown, at: string, s: Node) => string[]> = {
  type: (t, value, at) => {
    const wanted = Array.isArray(t) ? (t as string[]) : [t as string];
    return typeOf(value).some((x) => wanted.includes(x)) ? [] : [`${at}: expected ${wanted.join(" or ")}`];
  },
  const: (c, value, at) => (value === c ? [] : [`${at}: expected ${JSON.stringify(c)}`]),
  enum: (e, value, at) =>
    (e as unknown[]).includes(value) ? [] : [`${at}: not one of ${JSON.stringify(e)}`],
  pattern: (p, value, at) =>
    typeof value !== "string" || new RegExp(p as string, "u").test(value)
      ? []
      : [`${at}: does not match ${p}`],
  minLength: (n, value, at) =>
    typeof value !== "string" || [...value].length >= (n as number) ? [] : [`${at}: shorter than ${n}`],
  maxLength: (n, value, at) =>
    typeof value !== "string" || [...value].length <= (n as number) ? [] : [`${at}: longer than ${n}`],
  minimum: (n, value, at) =>
    typeof value !== "number" || value >= (n as number) ? [] : [`${at}: below ${n}`],
  maximum: (n, value, at) =>
    typeof value !== "number" || value <= (n as number) ? [] : [`${at}: above ${n}`],
  exclusiveMinimum: (n, value, at) =>
    typeof value !== "number" || value > (n as number) ? [] : [`${at}: not above ${n}`],
  minItems: (n, value, at) =>
    !Array.isArray(value) || value.length >= (n as number) ? [] : [`${at}: fewer than ${n} items`],
  maxItems: (n, value, at) =>
    !Array.isArray(value) || value.length <= (n as number) ? [] : [`${at}: more than ${n} items`],
  items: (item, value, at) =>
    Array.isArray(value) ? value.flatMap((v, i) => schemaProblems(item, v, `${at}[${i}]`)) : [],
  required: (keys, value, at) =>
    isObject(value) ? (keys as string[]).filter((k) => !(k in value)).map((k) => `${at}.${k}: missing`) : [],
  properties: (props, value, at) =>
    isObject(value)
      ? Object.entries(props as Node).flatMap(([k, p]) =>
          k in value ? schemaProblems(p, value[k], `${at}.${k}`) : [],
        )
      : [],
  additionalProperties: (extra, value, at, s) =>
    isObject(value)
      ? Object.keys(value)
          .filter((k) => !(k in ((s.properties as Node | undefined) ?? {})))
          .flatMap((k) => schemaProblems(extra, value[k], `${at}.${k}`))
      : [],
  propertyNames: (names, value, at) =>
    isObject(value) ? Object.keys(value).flatMap((k) => schemaProblems(names, k, `${at} key ${k}`)) : [],
  anyOf: (options, value, at) =>
    matching(options as unknown[], value, at) > 0 ? [] : [`${at}: fits none of anyOf`],
  oneOf: (options, value, at) =>
    matching(options as unknown[], value, at) === 1 ? [] : [`${at}: does not fit exactly one of oneOf`],
};
