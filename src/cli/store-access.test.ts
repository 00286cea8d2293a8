// A profile whose config says PostgreSQL is refused by every process that would open its store,
// never run on state.db while the config says otherwise.
import { describe, expect, it } from "vitest";
import { defaultConfig } from "../config/schema.js";
import { storeSettings } from "./store-access.js";

describe("store settings", () => {
  it("take SQLite's settings, and refuse engine postgres with what to do", () => {
    expect(storeSettings(defaultConfig())).toMatchObject({ synchronous: "full", busyTimeoutMs: 100 });
    const config = defaultConfig();
    config.store = { ...config.store, engine: "postgres", url: "postgresql://tenax@db/tenax" };
    expect(() => storeSettings(config)).toThrow(
      /store\.engine is postgres, but this Tenax runs a profile on SQLite only/,
    );
  });
});
