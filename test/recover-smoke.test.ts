import { describe, expect, it } from "vitest";
import { PageImage } from "../src/store/recover/page-image.js";
import { salvagePages } from "../src/store/recover/page-salvage.js";
import { salvageSql } from "../src/store/recover/sql-salvage.js";
import { releaseStore } from "../src/store/registry.js";
import { checkpoint } from "./helpers/corrupt.js";
import { tempProfile } from "./helpers/tmp.js";
import { buildStore } from "./recover-fixtures.js";

describe("smoke", () => {
  it("pages equal sql", async () => {
    const paths = tempProfile();
    const { store, written } = await buildStore(paths, {
      sessions: 3,
      messagesPerSession: 120,
      seed: 1,
      bigEvery: 17,
    });
    checkpoint(paths.state);
    await store.appendMessage({ session_id: written.sessions[0] ?? "", role: "user", content: "in wal" });
    await store.deleteSession(written.sessions[1] ?? "");
    const image = PageImage.open(paths.state, `${paths.state}-wal`);
    const pages = salvagePages(image);
    image.close();
    const sql = salvageSql(paths.state, { sessions: 0, messages: 0, turns: 0 });
    for (const t of ["sessions", "messages", "turns"] as const) {
      expect([...pages.rows[t].values()].sort((a, b) => a.rowid - b.rowid)).toEqual([
        ...sql.tables[t].rows.values(),
      ]);
    }
    console.log(pages.freelist, pages.unreadable, pages.wal, pages.meta);
    await releaseStore(store);
  });
});
