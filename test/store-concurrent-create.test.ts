// Processes that open a profile's store that does not exist yet, all at once (cron ticks started
// by a timer on a fresh machine, a gateway beside them), each take what another has migrated
// meanwhile: none dies of "table meta already exists". Before the fix, about one round in three
// of these failed.
import { describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { tempDir } from "./helpers/tmp.js";

describe("a new store opened by many processes at once", () => {
  it("migrates once and every process goes on", async () => {
    requireBuild();
    for (let round = 0; round < 3; round++) {
      const home = tempDir("tenax-race-home-");
      const results = await Promise.all(
        Array.from({ length: 6 }, () => tenaxAsync(home, ["cron", "list", "--json"])),
      );
      for (const r of results) {
        expect(r.stderr).not.toMatch(/unexpected failure|already exists/);
        expect(r.status).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ jobs: [] });
      }
    }
  }, 120_000);
});
