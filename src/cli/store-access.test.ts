// The store settings every process opens its profile's store with: the engine and its URL from
// config, beside SQLite's own settings.
import { describe, expect, it } from "vitest";
import { defaultConfig } from "../config/schema.js";
import { storeSettings } from "./store-access.js";

describe("store settings", () => {
  it("take the engine from config: SQLite by default, PostgreSQL with its URL and pool", () => {
    expect(storeSettings(defaultConfig())).toMatchObject({
      engine: "sqlite",
      synchronous: "full",
      busyTimeoutMs: 100,
    });
    const config = defaultConfig();
    config.store = { ...config.store, engine: "postgres", url: "postgresql://tenax@db/tenax", pool_size: 4 };
    expect(storeSettings(config)).toMatchObject({
      engine: "postgres",
      url: "postgresql://tenax@db/tenax",
      poolSize: 4,
    });
  });
});
