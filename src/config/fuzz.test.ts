// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the fuzzer writes literal ${VAR} references on purpose
// Property-based fuzzing of config loading (fast-check): random YAML, mutated valid configs and
// binary junk written to a real profile (and junk .env files). loadConfig returns a config or
// throws a TenaxError that names the file (and the key and line of a key problem); never another
// exception, never a hang.
// The simulator's script parser gets the same treatment. Seeded: TENAX_SEED=N replays (`seed=N`).
import { writeFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { profileWith } from "../../test/helpers/temp-home.js";
import { TenaxError } from "../core/errors.js";
import { parseScript } from "../llm/simulator/steps.js";
import { loadConfig } from "./load.js";

const SEED = process.env.TENAX_SEED ? Number(process.env.TENAX_SEED) : Math.floor(Math.random() * 2 ** 31);
const RUNS = 400;
const ENV = { MAIN_KEY_1: "sk-one", TENAX_API_KEY: "gw-key", PORT: "9000", EMPTY: "" };

/** A config that loads: the contract's example, as data to mutate. */
const VALID = {
  model: { provider: "main", name: "some-model" },
  providers: {
    main: {
      type: "openai",
      base_url: "https://example.invalid/v1",
      api_keys: ["${MAIN_KEY_1}"],
      max_concurrency: 8,
      models: { "some-model": { context_window: 128000, max_output_tokens: 8192 } },
    },
    backup: { type: "anthropic" },
    sim: { type: "simulator", script: [{ type: "reply", text: "hi" }] },
  },
  fallback: [{ provider: "backup", name: "other-model" }],
  auxiliary: { compression: { provider: "main", name: "small-model", timeout: 120, fallback: [] } },
  compression: { enabled: true, threshold: 0.5 },
  retry: { max_attempts: 4 },
  gateway: { host: "127.0.0.1", port: 8642, api_key: "${TENAX_API_KEY}", drain_timeout: 30 },
  dashboard: { host: "127.0.0.1", port: 8080 },
  checkpoints: { enabled: false, max_snapshots: 50 },
};

const junkString = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom(
    "${",
    "${}",
    "${UNSET}",
    "${EMPTY}",
    "${PORT}",
    "$${X}",
    "${A:-b}",
    "${1BAD}",
    "${${X}}",
    "~",
    "null",
  ),
  fc.string({ minLength: 5000, maxLength: 20000 }),
);
const junkNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -1, 1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 0.1),
);
const junkValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    junkString,
    junkNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** Every key path of VALID, so a mutation can land anywhere in it. */
function keyPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== "object") return [prefix];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([k, v]) => keyPaths(v, [...prefix, k]))];
}
const PATHS = keyPaths(VALID).filter((p) => p.length > 0);

type Mutation = { kind: "set" | "delete" | "unknown"; path: (string | number)[]; value: unknown };
const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom("set", "delete", "unknown"),
  path: fc.constantFrom(...PATHS),
  value: junkValue,
});

function mutate(base: unknown, mutations: Mutation[]): unknown {
  const copy = structuredClone(base) as Record<string | number, unknown>;
  for (const m of mutations) {
    const parent = m.path
      .slice(0, -1)
      .reduce<unknown>((node, key) => (node as Record<string | number, unknown> | null)?.[key], copy);
    if (parent === null || typeof parent !== "object") continue;
    const node = parent as Record<string | number, unknown>;
    const key = m.path.at(-1) as string | number;
    if (m.kind === "set") node[key] = m.value;
    if (m.kind === "delete") delete node[key];
    if (m.kind === "unknown") node[`${String(key)}_typo`] = m.value;
  }
  return copy;
}

/** Text-level damage: junk bytes spliced in, a cut, tabs, or an alias flood. */
const textDamage = fc.oneof(
  fc.constant((t: string) => t),
  fc.tuple(fc.nat(), fc.string({ unit: "binary", maxLength: 20 })).map(
    ([at, junk]) =>
      (t: string) =>
        t.slice(0, at % (t.length + 1)) + junk + t.slice(at % (t.length + 1)),
  ),
  fc.nat().map((at) => (t: string) => t.slice(0, at % (t.length + 1))),
  fc.constant((t: string) => t.replace(/ {2}/g, "\t")),
  fc.constant(
    (t: string) =>
      `${t}\nx: &a [1, 2, 3]\ny: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nz: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nw: [*c, *c, *c, *c, *c, *c, *c, *c]\n`,
  ),
  fc.constant((t: string) => `${t}\n<<: *missing\n`),
  fc.constant((t: string) => `%YAML 1.2\n---\n${t}\n---\nsecond: doc\n`),
);

const yamlDocument = fc.oneof(
  fc
    .tuple(fc.array(mutation, { maxLength: 4 }), textDamage)
    .map(([ms, damage]) => damage(stringify(mutate(VALID, ms)))),
  fc
    .tuple(fc.array(mutation, { maxLength: 3 }), textDamage)
    .map(([ms, damage]) => damage(stringify(mutate(VALID, ms), { flow: true } as never))),
  junkValue.map((v) => stringify(v)),
  fc.string({ unit: "binary", maxLength: 400 }),
  fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes).toString("latin1")),
);

/** A .env that is mostly fine: empty, KEY=VALUE lines, now and then junk. */
const dotenvText = fc.oneof(
  { weight: 3, arbitrary: fc.constant("") },
  {
    weight: 2,
    arbitrary: fc.constantFrom("MAIN_KEY_1=from-dotenv\n", "export PORT=1\n# note\n", "EMPTY=\n"),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
);

/** The property: a config, or a TenaxError naming the file and, for a key, the key and line. */
function checkLoad(paths: ReturnType<typeof profileWith>): void {
  const started = performance.now();
  try {
    const loaded = loadConfig(paths, ENV);
    expect(loaded.config.gateway.port).toBeTypeOf("number");
  } catch (error) {
    if (!TenaxError.isInstance(error))
      throw new Error(`not a TenaxError: ${String(error)}`, { cause: error });
    // The file at fault: config.yaml, or the profile's .env (junk there is fuzzed too).
    const named = error.message.includes(paths.config) || error.message.includes(`${paths.env}:`);
    expect(named, error.message).toBe(true);
    const problems = (error.data.problems ?? []) as { line: number; path: string }[];
    for (const p of problems) {
      expect(Number.isInteger(p.line) && p.line >= 1, `line of ${p.path}`).toBe(true);
      expect(error.message).toContain(`${paths.config}:${p.line}`);
      if (p.path !== "") expect(error.message).toContain(p.path);
    }
  }
  // Never a hang: a config of a few kilobytes loads or fails in milliseconds (5 s: a loaded CI).
  expect(performance.now() - started).toBeLessThan(5000);
}

describe("config loading under fuzzing", () => {
  it("returns a config or a TenaxError that names the file, key and line, for any config.yaml", () => {
    console.log(`config fuzz seed=${SEED}`);
    const paths = profileWith("");
    let loaded = 0;
    let refused = 0;
    fc.assert(
      fc.property(yamlDocument, dotenvText, (text, dotenv) => {
        writeFileSync(paths.config, text);
        writeFileSync(paths.env, dotenv);
        try {
          loadConfig(paths, ENV);
          loaded++;
        } catch {
          refused++;
        }
        checkLoad(paths);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(`config fuzz seed=${SEED}: ${RUNS} documents, ${loaded} loaded, ${refused} refused`);
    // Both sides were exercised: the generator is not all junk, nor all valid.
    expect(loaded).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(RUNS / 4);
  });

  it("parses a simulator script or throws a TenaxError that says what is wrong, for any input", () => {
    const validStep = fc.constantFrom<unknown>(
      { type: "reply", text: "hi" },
      { type: "error", status: 429, headers: { "retry-after": "1" } },
      { type: "hang", phase: "mid_stream", after_chunks: 2 },
      { type: "drop" },
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "ls" } }] },
    );
    const step = fc.oneof(
      validStep,
      fc.tuple(validStep, mutation).map(([s, m]) => mutate(s, [{ ...m, path: [m.path.at(-1) ?? "type"] }])),
      junkValue,
    );
    fc.assert(
      fc.property(fc.oneof(fc.array(step, { maxLength: 5 }), junkValue), (input) => {
        try {
          parseScript(input);
        } catch (error) {
          if (!TenaxError.isInstance(error))
            throw new Error(`not a TenaxError: ${String(error)}`, { cause: error });
          expect(error.message).toMatch(/^invalid simulator script: .+/);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
