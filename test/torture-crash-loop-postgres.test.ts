// Torture: the crash loop on PostgreSQL (test/helpers/crash-loop.ts says what it does and checks),
// a gateway whose profile stores in a database of a private cluster killed with SIGKILL cycle
// after cycle: every acknowledged turn and run is stored once, in order, and state.db never exists.
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { openProfileReader, type ProfileReader } from "../src/store/registry.js";
import { requireBuild } from "./helpers/cli.js";
import { crashLoop } from "./helpers/crash-loop.js";
import { usePostgresCluster } from "./helpers/postgres.js";

beforeAll(() => requireBuild());
const cluster = usePostgresCluster();

describe("torture: crash loop on PostgreSQL", () => {
  it("kill -9 at random moments across concurrent turns: every acknowledged message is stored once, every session is consistent", async () => {
    const url = await cluster().createDatabase();
    const result = await crashLoop({
      name: "torture-crash-loop-postgres",
      chatClients: 4,
      runClients: 2,
      minCycles: 5,
      maxCycles: 12,
      budgetMs: Number(process.env.TENAX_CRASH_SECONDS ?? 25) * 1000,
      prepare(paths) {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config names the variable, as users write it
        appendFileSync(paths.config, 'store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }\n');
        writeFileSync(paths.env, `TENAX_DATABASE_URL=${url}\n`, { mode: 0o600 });
      },
      openReader: async (paths) =>
        (await openProfileReader(paths, { engine: "postgres", url })) as ProfileReader,
    });
    console.log(result.summary);
    expect(result.interrupted).toBeGreaterThan(0);
    expect(existsSync(result.paths.state)).toBe(false);
  }, 150_000);
});
