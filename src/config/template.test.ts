// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { profileWith, thrown } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";
import { usesBuiltInSimulator } from "./schema.js";
import { commentOut, EXAMPLE_PROVIDER_YAML, renderConfigTemplate } from "./template.js";

const template = renderConfigTemplate({ profile: "dev", gatewayPort: 8650, dashboardPort: 8088 });

describe("config template", () => {
  it("loads as a valid config that uses the built-in simulator and the given ports", () => {
    const paths = profileWith(template);
    const { config, source } = loadConfig(paths, {});
    expect(source).toBe("file");
    expect(usesBuiltInSimulator(config)).toBe(true);
    expect(config.gateway.port).toBe(8650);
    expect(config.dashboard.port).toBe(8088);
  });

  it("explains every section of the contract", () => {
    for (const key of [
      "model:",
      "providers:",
      "fallback:",
      "auxiliary:",
      "compression:",
      "retry:",
      "gateway:",
      "dashboard:",
      "tools:",
      "checkpoints:",
      "store:",
      "api_key:",
      "mcp:",
    ]) {
      expect(template).toContain(key);
    }
  });

  it("gives a valid config with a real provider once the example is uncommented", () => {
    const uncommented = template.replace(commentOut(EXAMPLE_PROVIDER_YAML), EXAMPLE_PROVIDER_YAML);
    expect(uncommented).not.toBe(template);
    const paths = profileWith(uncommented);
    const { config } = loadConfig(paths, { OPENAI_API_KEY: "sk-test" });
    expect(usesBuiltInSimulator(config)).toBe(false);
    expect(config.model).toEqual({ provider: "main", name: "gpt-4o-mini" });
    expect(config.providers.main?.api_keys).toEqual(["sk-test"]);

    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toContain("${OPENAI_API_KEY} is not set");
  });

  it("gives valid MCP servers once their example is uncommented, the header's token a secret", () => {
    const lines = template.split("\n");
    const from = lines.indexOf("# mcp:");
    expect(from).toBeGreaterThan(0);
    const block = lines.slice(from, from + 4).map((line) => line.replace(/^# /, ""));
    const paths = profileWith(`${template}\n${block.join("\n")}\n`);
    const { config, secretVariables } = loadConfig(paths, { MCP_TOKEN: "mcp-token-123456" });
    expect(Object.keys(config.mcp.servers)).toEqual(["files", "remote"]);
    expect(config.mcp.servers.remote).toMatchObject({
      headers: { Authorization: "Bearer mcp-token-123456" },
    });
    expect(secretVariables).toContain("MCP_TOKEN");
  });

  it("takes the key from the profile's .env when the environment lacks it", () => {
    const paths = profileWith(template.replace(commentOut(EXAMPLE_PROVIDER_YAML), EXAMPLE_PROVIDER_YAML));
    writeFileSync(paths.env, "OPENAI_API_KEY=sk-from-dotenv\n", { mode: 0o600 });
    expect(loadConfig(paths, {}).config.providers.main?.api_keys).toEqual(["sk-from-dotenv"]);
  });
});
