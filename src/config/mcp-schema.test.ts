import { describe, expect, it } from "vitest";
import { profileWith } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";
import { loadProfileSecrets } from "./profile-secrets.js";
import { configSchema } from "./schema.js";

const issues = (mcp: unknown) => {
  const parsed = configSchema.safeParse({ mcp });
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("mcp config", () => {
  it("takes stdio and Streamable HTTP servers, with their defaults", () => {
    const parsed = configSchema.parse({
      mcp: {
        servers: {
          files: { command: "npx", args: ["-y", "some-server"] },
          remote: {
            url: "https://mcp.example.invalid/mcp",
            headers: { Authorization: "Bearer x" },
            approve: "all",
          },
        },
      },
    });
    expect(parsed.mcp.servers.files).toEqual({
      command: "npx",
      args: ["-y", "some-server"],
      env: {},
      timeout: 60,
      approve: [],
    });
    expect(parsed.mcp.servers.remote).toEqual({
      url: "https://mcp.example.invalid/mcp",
      headers: { Authorization: "Bearer x" },
      timeout: 60,
      approve: "all",
    });
    expect(configSchema.parse({}).mcp).toEqual({ servers: {} });
  });

  it("names what is wrong, where", () => {
    expect(issues({ servers: { both: { command: "x", url: "http://a" } } })).toEqual([
      "mcp.servers.both: give either command (a stdio server) or url (a Streamable HTTP server), not both",
    ]);
    expect(issues({ servers: { s: { command: "x", timeout: -1, bogus: 1 } } })).toEqual([
      "mcp.servers.s.timeout: expected a number of seconds (more than 0, at most 3600)",
      'mcp.servers.s: Unrecognized key: "bogus"',
    ]);
    expect(issues({ servers: { s: { url: "ftp://x" } } })).toEqual([
      "mcp.servers.s.url: expected an http:// or https:// URL",
    ]);
    expect(issues({ servers: { "has space": { command: "x" } } })[0]).toContain(
      'mcp.servers.has space: "has space" is not a server name: use letters, digits, - and _',
    );
    expect(issues({ servers: { s: "npx server" } })[0]).toContain(
      "mcp.servers.s: expected { command, args, env, cwd, timeout }",
    );
    expect(issues({ servers: { s: { command: "x", approve: "some" } } })[0]).toContain(
      'mcp.servers.s.approve: expected a list of the server\'s tool names, or "all"',
    );
  });

  it("redacts what an env or args value reads from a variable, and header values, never a literal env value", () => {
    const paths = profileWith(
      [
        "mcp:",
        "  servers:",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: config values as the user writes them
        '    gh: { command: npx, args: ["--token=${GH_TOKEN}"], env: { DATA_ROOT: /srv/data/projects, API_KEY: "${SERVER_KEY}" } }',
        '    remote: { url: "https://mcp.example.invalid/mcp", headers: { X-Key: literal-header-secret } }',
        "",
      ].join("\n"),
    );
    const env = { GH_TOKEN: "ghp_tokenvalue12345", SERVER_KEY: "server-key-value-678" };
    const loaded = loadConfig(paths, env);
    expect(loaded.secretVariables).toEqual(expect.arrayContaining(["GH_TOKEN", "SERVER_KEY"]));
    const { redactor } = loadProfileSecrets(paths, loaded, env);
    const text = "ghp_tokenvalue12345 server-key-value-678 literal-header-secret /srv/data/projects";
    expect(redactor.redact(text)).not.toMatch(
      /ghp_tokenvalue12345|server-key-value-678|literal-header-secret/,
    );
    expect(redactor.redact(text)).toContain("/srv/data/projects");
  });
});
