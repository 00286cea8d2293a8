// Torture: a crash loop on SQLite (test/helpers/crash-loop.ts says what it does and checks). Once
// the loop is over, SQLite's own integrity check passes on the file every kill -9 left behind.
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { openReader } from "../src/store/registry.js";
import { requireBuild } from "./helpers/cli.js";
import { crashLoop } from "./helpers/crash-loop.js";

beforeAll(() => requireBuild());

describe("torture: crash loop", () => {
  it("kill -9 at random moments across concurrent turns: every acknowledged message survives, every session is consistent", async () => {
    const result = await crashLoop({
      name: "torture-crash-loop",
      chatClients: 6,
      runClients: 2,
      minCycles: 8,
      maxCycles: 20,
      budgetMs: Number(process.env.TENAX_CRASH_SECONDS ?? 45) * 1000,
      openReader: async (paths) => openReader(paths),
    });
    const db = new Database(result.paths.state, { readonly: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      db.close();
    }
    console.log(`${result.summary}; integrity ok`);
    expect(result.interrupted).toBeGreaterThan(0);
  }, 150_000);
});
