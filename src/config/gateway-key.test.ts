import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { profileWith, thrown } from "../../test/helpers/temp-home.js";
import { currentGatewayKey, ensureGatewayKey } from "./gateway-key.js";
import { loadConfig } from "./load.js";

const fixed = (size: number) => Buffer.alloc(size, 7);

describe("the gateway's key", () => {
  it("defaults to TENAX_API_KEY: the environment first, then .env, with or without config.yaml", () => {
    const bare = profileWith(undefined, "TENAX_API_KEY=from-dotenv\n");
    expect(loadConfig(bare, {}).config.gateway.api_key).toBe("from-dotenv");
    expect(loadConfig(bare, {}).gatewayKeySource).toBe("env_file");
    expect(loadConfig(bare, { TENAX_API_KEY: "from-env" }).config.gateway.api_key).toBe("from-env");
    expect(loadConfig(bare, { TENAX_API_KEY: "from-env" }).gatewayKeySource).toBe("environment");
    const written = profileWith('gateway: { api_key: "in-file" }\n', "TENAX_API_KEY=from-dotenv\n");
    expect(loadConfig(written, { TENAX_API_KEY: "from-env" }).config.gateway.api_key).toBe("in-file");
    const none = profileWith("gateway: { auth: none }\n", "TENAX_API_KEY=from-dotenv\n");
    expect(loadConfig(none, {}).config.gateway.api_key).toBeUndefined();
  });

  it("a blank TENAX_API_KEY is a config error naming where it is set", () => {
    const paths = profileWith("{}\n", "A=1\nTENAX_API_KEY='  '\n");
    expect(thrown(() => loadConfig(paths, {})).message).toBe(
      `config error: ${paths.env}:2: TENAX_API_KEY: the API key is empty or only whitespace; set a real key, or leave it out to have the gateway's first start write one`,
    );
    expect(thrown(() => loadConfig(paths, { TENAX_API_KEY: "" })).message).toMatch(
      /^config error: TENAX_API_KEY in the environment \(the default of gateway\.api_key\): the API key is empty/,
    );
    expect(thrown(() => loadConfig(paths, { TENAX_API_KEY: " padded" })).message).toMatch(
      /no space at either end/,
    );
  });

  it("auth: none with an api_key is a contradiction named at its line", () => {
    const paths = profileWith('gateway:\n  auth: none\n  api_key: "k"\n');
    expect(thrown(() => loadConfig(paths, {})).message).toMatch(
      /config\.yaml:3: gateway\.api_key: auth: none/,
    );
  });

  it("with no key anywhere, ensureGatewayKey appends one to .env, keeps the rest, and reuses it", () => {
    const paths = profileWith(undefined, "# mine\nOTHER=1");
    chmodSync(paths.env, 0o640);
    const loaded = loadConfig(paths, {});
    expect(loaded.config.gateway.api_key).toBeUndefined();
    const made = ensureGatewayKey(paths, loaded.config, loaded.gatewayKeySource, {}, fixed);
    const key = `tnx-${fixed(32).toString("base64url")}`;
    expect(made).toMatchObject({ source: "written", config: { gateway: { api_key: key } } });
    expect(made.tightened).toMatch(/mode 640.*made it 0600/);
    const text = readFileSync(paths.env, "utf8");
    expect(text.startsWith("# mine\nOTHER=1\n# The gateway's API key")).toBe(true);
    expect(text.endsWith(`\nTENAX_API_KEY=${key}\n`)).toBe(true);
    expect(statSync(paths.env).mode & 0o777).toBe(0o600);
    // The next load finds it; nothing is written again.
    const again = loadConfig(paths, {});
    expect(again.config.gateway.api_key).toBe(key);
    expect(ensureGatewayKey(paths, again.config, again.gatewayKeySource, {}).source).toBe("env_file");
    expect(readFileSync(paths.env, "utf8")).toBe(text);
  });

  it("a client loaded before the key was written finds it on its next look", () => {
    const paths = profileWith();
    const early = loadConfig(paths, {}).config;
    expect(currentGatewayKey(paths, early, {})).toBeUndefined();
    writeFileSync(paths.env, "TENAX_API_KEY=later\n", { mode: 0o600 });
    expect(currentGatewayKey(paths, early, {})).toBe("later");
    expect(
      currentGatewayKey(paths, { ...early, gateway: { ...early.gateway, auth: "none" } }, {}),
    ).toBeUndefined();
  });
});
