// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
// The store section of config.yaml: SQLite by default with nothing to write, PostgreSQL with a URL
// read from the environment and kept secret; a missing or wrong URL stops the load with the key.
import { chmodSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { profileWith, thrown } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";
import { configSecrets, redactConfig } from "./secrets.js";

describe("store in config.yaml", () => {
  it("is SQLite by default", () => {
    const { config } = loadConfig(profileWith("retry: { max_attempts: 2 }\n"), {});
    expect(config.store).toMatchObject({ engine: "sqlite", synchronous: "full" });
    expect(config.store.url).toBeUndefined();
  });

  it("takes PostgreSQL with its URL from the environment, and the URL is a secret", () => {
    const url = "postgresql://tenax:s3cret-pw-123@db.example:5432/tenax";
    const paths = profileWith('store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }\n');
    const { config } = loadConfig(paths, { TENAX_DATABASE_URL: url });
    expect(config.store).toMatchObject({ engine: "postgres", url, pool_size: 10 });
    // The password alone is the secret: the host and database stay readable wherever it is shown.
    expect(configSecrets(config)).toContainEqual({ name: "store.url", value: "s3cret-pw-123" });
    expect(redactConfig(config).store.url).toBe("postgresql://tenax:***@db.example:5432/tenax");
  });

  it("takes a URL without a password as no secret, and warns of a password written in config.yaml", () => {
    const readable = (yaml: string) => {
      const paths = profileWith(yaml);
      chmodSync(paths.config, 0o644);
      return paths;
    };
    const bare = loadConfig(readable("store: { engine: postgres, url: postgresql://tenax@db/tenax }\n"), {});
    expect(configSecrets(bare.config).filter((s) => s.name === "store.url")).toEqual([]);
    expect(bare.warnings.join("\n")).not.toMatch(/in plain text/);
    const literal = loadConfig(
      readable("store: { engine: postgres, url: postgresql://tenax:pw-in-file-9@db/tenax }\n"),
      {},
    );
    expect(literal.warnings.join("\n")).toMatch(
      /holds a secret \(an API key, a token or a password\) in plain text/,
    );
  });

  it("refuses postgres without a URL, a URL of another scheme and an unknown engine, naming each key", () => {
    expect(thrown(() => loadConfig(profileWith("store: { engine: postgres }\n"), {})).message).toMatch(
      /store\.url.*missing: engine postgres needs the database's URL/s,
    );
    expect(
      thrown(() => loadConfig(profileWith("store: { engine: postgres, url: http://db:5432/x }\n"), {}))
        .message,
    ).toMatch(/store\.url.*expected a postgresql:\/\/ URL/s);
    expect(thrown(() => loadConfig(profileWith("store: { engine: mysql }\n"), {})).message).toMatch(
      /store\.engine.*expected sqlite \(embedded, the default\) or postgres/s,
    );
  });
});
