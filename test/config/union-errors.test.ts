import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";

const CACHES = "caches:\n  - { name: triton, kind: triton, path: /tmp/c }\n";
const profile = (lines: string) => `${CACHES}profiles:\n  p:\n${lines}`;

/** Every line kcache says about this kcache.yml, without the file's name. */
function problems(yml: string): string[] {
  try {
    parseConfig(yml, "k.yml");
  } catch (e) {
    return (e as Error).message.split("\n").map((l) => l.replace(/^k\.yml: /, ""));
  }
  throw new Error("kcache.yml was accepted");
}

describe("a value that fits none of a union's shapes is reported as the one the user meant", () => {
  it.each([
    [
      "a command without run",
      "    commands:\n      - name: a\n",
      ["profiles.p.commands[0].run: missing; expected string"],
    ],
    [
      "a command without run, with a command's env",
      "    commands:\n      - { name: a, env: { A: b } }\n",
      ["profiles.p.commands[0].run: missing; expected string"],
    ],
    [
      "a group whose commands lack run",
      "    commands:\n      - { name: g, parallel: [{ name: a }, { name: b, run: x }] }\n",
      ["profiles.p.commands[0].parallel[0].run: missing; expected string"],
    ],
    [
      "a group given a command's env",
      "    commands:\n      - { name: g, parallel: [{ name: a, run: x }], env: { A: b } }\n",
      ['profiles.p.commands[0].env: only a command takes "env"; remove it, or what does not go with it'],
    ],
    [
      "a list of sources with a bad one",
      "    source: [a.sh, 1]\n    commands: [{ name: a, run: x }]\n",
      ["profiles.p.source[1]: Invalid input: expected string, received number"],
    ],
    [
      "a container object with a misspelt key",
      "    commands: [{ name: a, run: x }]\n    github: { container: { imag: x } }\n",
      ['profiles.p.github.container.image: missing, and "imag" is there: did you mean "image"?'],
    ],
    [
      "a check without its type",
      "    commands: [{ name: a, run: x }]\n    checks: [{ file: r.json, fields: [x] }]\n",
      [
        'profiles.p.checks[0].type: missing; use one of "coverage", "finite-positive", "values", "threshold", "allclose", "agree", "command"',
      ],
    ],
  ])("%s", (_, lines, expected) => {
    expect(problems(profile(lines))).toEqual(expected);
  });

  it.each([
    [
      "an S3 setting on a store without a type",
      "{ bucket: ci-cache }",
      ['store.bucket: only type: s3 takes "bucket"; set type: s3, or remove it'],
    ],
    [
      "an S3 setting on GitHub's store",
      "{ type: gha, bucket: ci-cache }",
      ['store.bucket: only type: s3 takes "bucket"; set type: s3, or remove it'],
    ],
    ["a misspelt type", "{ type: S3, bucket: ci-cache }", ['store.type: Invalid input: expected "s3"']],
    [
      "an S3 store's misspelt key",
      "{ type: s3, buckt: ci-cache }",
      ['store.bucket: missing, and "buckt" is there: did you mean "bucket"?'],
    ],
  ])("%s", (_, store, expected) => {
    expect(problems(`${CACHES}store: ${store}\n`)).toEqual(expected);
  });

  it("a value of a type no shape takes says every type that would do", () => {
    expect(problems(`${CACHES.replace("/tmp/c }", "/tmp/c, max-size: [1] }")}`)).toEqual([
      "caches[0].max-size: Invalid input: expected number or string, received array",
    ]);
  });

  it("a local store needs no type, and a missing caches: comes after the mistake made", () => {
    expect(parseConfig(`${CACHES}store: { path: /srv/kcache }\n`, "k.yml").store).toMatchObject({
      type: "local",
      path: "/srv/kcache",
    });
    expect(problems("profiles:\n  p:\n    commands:\n      - name: a\n")).toEqual([
      "profiles.p.commands[0].run: missing; expected string",
      "caches: missing; expected array",
    ]);
  });
});
