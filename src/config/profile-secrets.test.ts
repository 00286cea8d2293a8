// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
import { describe, expect, it } from "vitest";
import { profileWith } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";
import { loadProfileSecrets } from "./profile-secrets.js";
import { configSecrets, redactConfig } from "./secrets.js";

const CONFIG = `model: { provider: main, name: m }
providers:
  main:
    type: openai
    base_url: https://example.invalid/v1
    api_keys: ["\${MAIN_KEY}", "literal-key-in-the-file", "prefix-\${PART_KEY}"]
    models: { m: { context_window: 1000, max_output_tokens: 100 } }
gateway:
  api_key: "\${TENAX_API_KEY}"
  port: \${GW_PORT}
`;

describe("the profile's secrets", () => {
  it("are the config's secret keys, every .env value, and the environment's values of those names", () => {
    const paths = profileWith(
      CONFIG,
      "MAIN_KEY=zq8Hk2pLm4Rt7Vw9\nPART_KEY=partpartpart\nGITHUB_TOKEN=ghp_fromdotenv123\nGW_PORT=9000\n",
    );
    const env = {
      TENAX_API_KEY: "gw-key-from-the-environment",
      PART_KEY: "env-wins-part-key",
      GITHUB_TOKEN: "ghp_fromtheenvironment",
      UNRELATED: "not-a-secret-value",
    };
    const loaded = loadConfig(paths, env);
    expect(loaded.secretVariables.sort()).toEqual(["MAIN_KEY", "PART_KEY", "TENAX_API_KEY"]);
    const { redactor, names } = loadProfileSecrets(paths, loaded, env);

    expect([...names].sort()).toEqual(["GITHUB_TOKEN", "GW_PORT", "MAIN_KEY", "PART_KEY", "TENAX_API_KEY"]);
    const text = [
      "zq8Hk2pLm4Rt7Vw9",
      "literal-key-in-the-file",
      "prefix-env-wins-part-key",
      "partpartpart",
      "ghp_fromdotenv123",
      "ghp_fromtheenvironment",
      "gw-key-from-the-environment",
      "not-a-secret-value",
      "9000",
    ].join(" ");
    expect(redactor.redact(text).split(" ")).toEqual([
      "[redacted:providers.main.api_keys[0]]",
      "[redacted:providers.main.api_keys[1]]",
      "[redacted:providers.main.api_keys[2]]",
      // The .env value of a name the environment overrides is still a secret.
      "[redacted:PART_KEY]",
      "[redacted:GITHUB_TOKEN]",
      "[redacted:GITHUB_TOKEN]",
      "[redacted:gateway.api_key]",
      "not-a-secret-value",
      "9000",
    ]);
  });

  it("include TENAX_API_KEY from .env or the environment even when no config names it", () => {
    const paths = profileWith(undefined, "TENAX_API_KEY=generated-gateway-key\n");
    const loaded = loadConfig(paths, {});
    const fromFile = loadProfileSecrets(paths, loaded, {});
    // gateway.api_key defaults to ${TENAX_API_KEY}: the value is named after the key that uses it.
    expect(loaded.config.gateway.api_key).toBe("generated-gateway-key");
    expect(fromFile.redactor.redact("generated-gateway-key")).toBe("[redacted:gateway.api_key]");
    const fromEnv = loadProfileSecrets(profileWith(), loaded, { TENAX_API_KEY: "exported-gateway-key" });
    expect(fromEnv.redactor.redact("exported-gateway-key")).toBe("[redacted:TENAX_API_KEY]");
    expect(fromEnv.names.has("TENAX_API_KEY")).toBe(true);
  });

  it("come from the one list of secret key paths, which also gives `profile show` its ***", () => {
    const { config } = loadConfig(profileWith(CONFIG, "MAIN_KEY=k1\nPART_KEY=k2\n"), {
      TENAX_API_KEY: "gw",
      GW_PORT: "9000",
    });
    expect(configSecrets(config).map((s) => s.name)).toEqual([
      "providers.main.api_keys[0]",
      "providers.main.api_keys[1]",
      "providers.main.api_keys[2]",
      "gateway.api_key",
    ]);
    const shown = redactConfig(config);
    expect(shown.providers.main?.api_keys).toEqual(["***", "***", "***"]);
    expect(shown.gateway.api_key).toBe("***");
    expect(shown.gateway.port).toBe(9000);
    expect(config.providers.main?.api_keys?.[0]).toBe("k1");
  });
});
