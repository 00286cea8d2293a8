// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
import { chmodSync, mkdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { profileWith, thrown } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";

const CONTRACT_EXAMPLE = `model: { provider: main, name: some-model }
providers:
  main:
    type: openai
    base_url: https://example.invalid/v1
    api_keys: ["\${MAIN_KEY_1}", "\${MAIN_KEY_2}"]
    max_concurrency: 8
    models:
      some-model: { context_window: 128000, max_output_tokens: 8192 }
  backup:
    type: anthropic
fallback:
  - { provider: backup, name: other-model }
auxiliary:
  compression: { provider: main, name: small-model, timeout: 120, fallback: [] }
compression: { enabled: true, threshold: 0.5 }
retry: { max_attempts: 4 }
gateway: { host: 127.0.0.1, port: 8642, api_key: "\${TENAX_API_KEY}", drain_timeout: 30 }
dashboard: { host: 127.0.0.1, port: 8080 }
checkpoints: { enabled: false, max_snapshots: 50 }
platforms:
  telegram: { token: "\${TELEGRAM_BOT_TOKEN}", api_root: https://api.telegram.org, allowed_users: [123456789], mode: polling }
`;

const BOT_TOKEN = "123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bQ";
const KEYS = {
  MAIN_KEY_1: "sk-one",
  MAIN_KEY_2: "sk-two",
  TENAX_API_KEY: "gw-key",
  TELEGRAM_BOT_TOKEN: BOT_TOKEN,
};

describe("loadConfig", () => {
  it("returns the defaults when there is no config.yaml", () => {
    const loaded = loadConfig(profileWith(), {});
    expect(loaded.source).toBe("defaults");
    expect(loaded.config.gateway.port).toBe(8642);
    expect(loaded.config.providers).toEqual({});
  });

  it("loads the contract's example with variables from the environment", () => {
    const { config, source } = loadConfig(profileWith(CONTRACT_EXAMPLE), KEYS);
    expect(source).toBe("file");
    expect(config.providers.main?.api_keys).toEqual(["sk-one", "sk-two"]);
    expect(config.providers.backup?.max_concurrency).toBe(8);
    expect(config.gateway.api_key).toBe("gw-key");
    expect(config.auxiliary.compression?.timeout).toBe(120);
    expect(config.store.synchronous).toBe("full");
    expect(config.platforms.telegram).toMatchObject({
      token: BOT_TOKEN,
      allowed_users: [123456789],
      mode: "polling",
    });
  });

  it("accepts a model listed with its context_window only, as docs/CONFIG.md shows, with a default output budget", () => {
    const paths = profileWith(
      `model: { provider: main, name: big }
providers:
  main:
    type: openai
    base_url: https://example.invalid/v1
    models:
      big: { context_window: 128000 }
      small: { context_window: 8000 }
      own: { context_window: 8000, max_output_tokens: 6000 }
`,
    );
    const models = loadConfig(paths, {}).config.providers.main?.models;
    // 4096, or a quarter of the window when that is smaller, so the prompt keeps room; a value
    // given is kept as it is.
    expect(models).toEqual({
      big: { context_window: 128_000, max_output_tokens: 4096 },
      small: { context_window: 8000, max_output_tokens: 2000 },
      own: { context_window: 8000, max_output_tokens: 6000 },
    });
    const zero = profileWith(
      "providers:\n  main: { type: openai, models: { m: { context_window: 8000, max_output_tokens: 0 } } }\nmodel: { provider: main, name: m }\n",
    );
    expect(thrown(() => loadConfig(zero, {})).message).toContain(
      "providers.main.models.m.max_output_tokens: expected a positive integer (tokens), got 0",
    );
  });

  it("names the file, line and key of a wrong type, and says how to fix it", () => {
    const paths = profileWith(CONTRACT_EXAMPLE.replace("max_concurrency: 8", "max_concurrency: eight"));
    const error = thrown(() => loadConfig(paths, KEYS));
    expect(error.message).toBe(
      `config error: ${paths.config}:7: providers.main.max_concurrency: expected a positive integer, got "eight"`,
    );
    expect(error.hint).toContain("tenax init --force");
    expect(error.hint).not.toContain("--profile");
  });

  it("puts --profile NAME in the hint for a named profile", () => {
    const paths = profileWith("retry: { max_attempts: 0 }\n", undefined, "work");
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toContain(":1: retry.max_attempts: expected an integer from 1 to 20, got 0");
    expect(error.hint).toContain("tenax --profile work init --force");
  });

  it("reports a bad value with what was expected and what was found", () => {
    const paths = profileWith("compression:\n  threshold: 1.5\ngateway:\n  port: 70000\n");
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toContain(
      `${paths.config}:2: compression.threshold: expected a number greater than 0 and at most 1, got 1.5`,
    );
    expect(error.message).toContain(
      `${paths.config}:4: gateway.port: expected an integer from 1 to 65535, got 70000`,
    );
  });

  it("reports an unknown top-level key at its own line", () => {
    const paths = profileWith("retry:\n  max_attempts: 3\n\ngatewya:\n  port: 1\n");
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toBe(
      `config error: ${paths.config}:4: gatewya: unknown key (did you mean "gateway"?)`,
    );
  });

  it("reports a nested unknown key at its own line", () => {
    const paths = profileWith(
      CONTRACT_EXAMPLE.replace("    max_concurrency: 8\n", "    max_concurency: 8\n"),
    );
    const error = thrown(() => loadConfig(paths, KEYS));
    expect(error.message).toBe(
      `config error: ${paths.config}:7: providers.main.max_concurency: unknown key (did you mean "max_concurrency"?)`,
    );
  });

  it("lists the allowed keys when nothing is close", () => {
    const error = thrown(() => loadConfig(profileWith("retry: { zzz: 1 }\n"), {}));
    expect(error.message).toContain("retry.zzz: unknown key (allowed here: max_attempts)");
  });

  it("reports every problem at once, one per line, in file order", () => {
    const paths = profileWith("gateway:\n  port: x\nbogus: 1\nretry:\n  max_attempts: 99\n");
    const error = thrown(() => loadConfig(paths, {}));
    const lines = error.message.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain(":2: gateway.port:");
    expect(lines[1]).toContain(":3: bogus: unknown key");
    expect(lines[2]).toContain(":5: retry.max_attempts:");
    expect(error.data.problems).toHaveLength(3);
  });

  it("reports a YAML syntax error with line and column", () => {
    const paths = profileWith("retry:\n  max_attempts: 4\ngateway:\n  port: 1\n   host: x\n");
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toBe(
      `config error: ${paths.config}:4:9: YAML syntax: Nested mappings are not allowed in compact mappings`,
    );
  });

  it("reports only the first syntax error, not its echoes, and explains a bare ${VAR} in a flow mapping", () => {
    const error = thrown(() =>
      loadConfig(profileWith("gateway: { port: ${P} }\ndashboard: { port: 1 }\n"), { P: "1" }),
    );
    expect(error.message.split("\n")).toHaveLength(1);
    expect(error.message).toContain(
      ':1:19: YAML syntax: Unexpected flow-map-start at node end (inside { } or [ ], put a variable in quotes: "${VAR}")',
    );
  });

  it("treats a duplicate key as an error at the second occurrence", () => {
    const paths = profileWith("gateway:\n  port: 9000\n  host: 127.0.0.1\n  port: 9001\n");
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toBe(
      `config error: ${paths.config}:4:3: gateway.port: duplicate key: each key may appear only once in a mapping`,
    );
  });

  it("refuses a flood of aliases (a YAML bomb) with a config error", () => {
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 8; i++)
      levels.push(
        `l${i}: &l${i} [${Array(10)
          .fill(i === 1 ? "*a" : `*l${i - 1}`)
          .join(", ")}]`,
      );
    const error = thrown(() => loadConfig(profileWith(`${levels.join("\n")}\n`), {}));
    expect(error.message).toContain("YAML: ");
    expect(error.message).toContain("alias");
  });

  it("rejects a file that is not a mapping", () => {
    const error = thrown(() => loadConfig(profileWith("- gateway\n- retry\n"), {}));
    expect(error.message).toContain("expected a mapping of sections");
  });

  it("checks that model, fallback and auxiliary name configured providers", () => {
    const paths = profileWith(
      CONTRACT_EXAMPLE.replace("{ provider: backup, name: other-model }", "{ provider: nope, name: x }"),
    );
    const error = thrown(() => loadConfig(paths, KEYS));
    expect(error.message).toBe(
      `config error: ${paths.config}:13: fallback[0].provider: "nope" is not a configured provider (configured: main, backup)`,
    );
  });

  it("never shows secrets in errors", () => {
    const text =
      'providers:\n  p:\n    type: openai\n    api_keys: [12345, ""]\ngateway: { api_key: "" }\nmodel: { provider: p, name: m }\n';
    const error = thrown(() => loadConfig(profileWith(text), {}));
    expect(error.message).toContain("providers.p.api_keys[0]: expected a non-empty API key, got ***");
    expect(error.message).toContain("gateway.api_key: the API key is empty or only whitespace");
    expect(error.message).not.toContain("12345");
  });

  it("keeps a secret out of YAML syntax errors", () => {
    const paths = profileWith('gateway:\n  api_key: "sk-very-secret\nretry: { max_attempts: 4 }\n');
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toContain("YAML syntax");
    expect(error.message).not.toContain("sk-very-secret");
  });

  // root reads any file, so this one only runs as an ordinary user; fs-errors.test.ts covers the mapping.
  it.skipIf(process.getuid?.() === 0)("reports an unreadable config.yaml clearly", () => {
    const paths = profileWith("retry: { max_attempts: 4 }\n");
    chmodSync(paths.config, 0o000);
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toBe(`cannot read ${paths.config}: permission denied`);
    expect(error.hint).toContain(`ls -l ${paths.config}`);
  });

  it("reports a config.yaml that is a directory", () => {
    const paths = profileWith();
    mkdirSync(paths.config);
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toBe(`cannot read ${paths.config}: it is a directory, not a file`);
  });
});

describe("loadConfig variables", () => {
  it("takes ${VAR} from the environment, then from .env, the environment winning", () => {
    const paths = profileWith(
      'gateway: { api_key: "${GW}", host: "${HOST}" }\n',
      "GW=from-dotenv\nHOST=10.0.0.1\n",
    );
    const { config } = loadConfig(paths, { GW: "from-env" });
    expect(config.gateway.api_key).toBe("from-env");
    expect(config.gateway.host).toBe("10.0.0.1");
  });

  it("uses ${VAR:-default} when the variable is unset, and turns an unquoted number into a number", () => {
    // In block style: inside a flow mapping { ... } a bare ${...} is not valid YAML, quote it there.
    const paths = profileWith("gateway:\n  port: ${PORT:-9100}\ndashboard:\n  port: ${DPORT}\n");
    const { config } = loadConfig(paths, { DPORT: "9200" });
    expect(config.gateway.port).toBe(9100);
    expect(config.dashboard.port).toBe(9200);
  });

  it("keeps a quoted value a string, and $${ as a literal ${", () => {
    const paths = profileWith('gateway: { api_key: "a$${B}c" }\ndashboard: { port: "${P}" }\n');
    const error = thrown(() => loadConfig(paths, { P: "9000" }));
    expect(error.message).toContain('dashboard.port: expected an integer from 1 to 65535, got "9000"');
    const ok = profileWith('gateway: { api_key: "a$${B}c" }\n');
    expect(loadConfig(ok, {}).config.gateway.api_key).toBe("a${B}c");
  });

  it("names an unset variable, its key, file and line, and where to set it", () => {
    const paths = profileWith(CONTRACT_EXAMPLE);
    const error = thrown(() =>
      loadConfig(paths, { MAIN_KEY_1: "k", TENAX_API_KEY: "t", TELEGRAM_BOT_TOKEN: BOT_TOKEN }),
    );
    expect(error.message).toBe(
      `config error: ${paths.config}:6: providers.main.api_keys[1]: \${MAIN_KEY_2} is not set`,
    );
    expect(error.hint).toContain(
      `set MAIN_KEY_2 in the environment, or add a line MAIN_KEY_2=... to ${paths.env}`,
    );
  });

  it("reports a malformed reference as a problem in the file", () => {
    const error = thrown(() => loadConfig(profileWith('gateway: { host: "${H" }\n'), {}));
    expect(error.message).toContain('gateway.host: a "${" has no closing "}"');
    expect(error.hint).toContain("init --force");
    expect(error.hint).not.toContain("environment");
  });

  it("never substitutes inside keys or changes the YAML structure", () => {
    const paths = profileWith('gateway: { host: "${H}" }\n');
    const { config } = loadConfig(paths, { H: "x\nport: 1" });
    expect(config.gateway.host).toBe("x\nport: 1");
    expect(config.gateway.port).toBe(8642);
  });
});

describe("loadConfig warnings", () => {
  it("warns about a plain-text API key that other users can read", () => {
    const paths = profileWith("gateway: { api_key: literal-key }\n");
    chmodSync(paths.config, 0o644);
    expect(loadConfig(paths, {}).warnings.join("\n")).toContain(`chmod 600 ${paths.config}`);
    chmodSync(paths.config, 0o600);
    expect(loadConfig(paths, {}).warnings).toEqual([]);
  });

  it("warns, at its line, when the store's page check runs less often than every 5 minutes", () => {
    // The interval `tenax init` wrote before the store was checked continuously.
    const paths = profileWith("gateway: { port: 9000 }\nhealth:\n  integrity_interval: 1800\n");
    expect(loadConfig(paths, {}).warnings).toEqual([
      `${paths.config}:3: health.integrity_interval: 1800 lets damage to pages no write touches go unseen for up to 30 min; 120 (the default) checks the whole store every 2 min within 1% of a core`,
    ]);
    for (const every of [0, 120, 300]) {
      const fine = profileWith(`health: { integrity_interval: ${every} }\n`);
      expect(loadConfig(fine, {}).warnings).toEqual([]);
    }
  });
});
