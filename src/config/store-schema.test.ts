// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
// The store section of config.yaml: SQLite by default with nothing to write, PostgreSQL with a URL
// read from the environment and kept secret; a missing or wrong URL stops the load with the key.
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
    expect(configSecrets(config)).toContainEqual({ name: "store.url", value: url });
    expect(JSON.stringify(redactConfig(config))).not.toContain("s3cret-pw-123");
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
