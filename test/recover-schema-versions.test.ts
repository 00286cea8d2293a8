// Salvage across schema versions: sessions gained a column in schema 5 (conversation_hash), so a
// session row is eight values in an older store and nine in a newer one. Both must come back, from
// SQL and from the pages, and the responses table (also nine columns) must never pass for sessions.
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { recoverStore } from "../src/store/recover/recover.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { checkpoint, overwritePages } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";

async function storeWithSessions(ids: string[]) {
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  for (const id of ids) {
    await store.createSession({ id, title: `title of ${id}` });
    await store.appendMessage({ session_id: id, role: "user", content: `hello from ${id}` });
  }
  await releaseStore(store);
  checkpoint(paths.state);
  return paths;
}

function sessionsIn(file: string): { id: string; title: string | null }[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT id, title FROM sessions ORDER BY id").all() as { id: string; title: string }[];
  } finally {
    db.close();
  }
}

describe("recover across schema versions", () => {
  it("salvages sessions of a store from before schema 5 (eight columns), and of today's (nine)", async () => {
    const old = await storeWithSessions(["s_a", "s_b"]);
    // Make it what an older Tenax wrote: no conversation_hash, user_version 4.
    const db = new Database(old.state);
    db.exec("DROP INDEX sessions_conversation; ALTER TABLE sessions DROP COLUMN conversation_hash; VACUUM;");
    db.pragma("user_version = 4");
    db.close();
    const current = await storeWithSessions(["s_c"]);
    for (const source of [old.state, current.state]) {
      const output = join(tempDir(), "new.db");
      const report = await recoverStore({ source, output });
      expect(report.output?.integrity.status).toBe("ok");
      const expected = source === old.state ? ["s_a", "s_b"] : ["s_c"];
      expect(sessionsIn(output)).toEqual(expected.map((id) => ({ id, title: `title of ${id}` })));
    }
  });

  it("reads nine-column session rows from the pages, and never takes a stored response for a session", async () => {
    const paths = await storeWithSessions(["s_pages"]);
    const db = new Database(paths.state);
    db.prepare(
      "INSERT INTO responses (id, session_id, model, status, previous_response_id, input, output, response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run("resp_1", "s_pages", "tenax", "completed", null, "[]", "[]", "{}", 1);
    db.close();
    checkpoint(paths.state);
    // Break the schema page: only the page walk can find the rows now.
    overwritePages(paths.state, [1], "zero", 1);
    const output = join(tempDir(), "new.db");
    const report = await recoverStore({ source: paths.state, output });
    expect(report.output?.integrity.status).toBe("ok");
    // The title proves the row itself came back, not a placeholder made from its messages.
    expect(sessionsIn(output)).toEqual([{ id: "s_pages", title: "title of s_pages" }]);
  });

  it("salvages turns of a store from before schema 7 (ten columns, epoch 0) and of today's (eleven), by SQL and from the pages", async () => {
    const make = async (dropEpoch: boolean) => {
      const paths = tempProfile();
      const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
      const sid = await store.createSession({ id: "s_t", title: "turns" });
      const turn = await store.startTurn(sid, 60_000, "pid:1", { role: "user", content: "q" });
      await store.write([{ op: "turn.update", id: turn, status: "interrupted", new_epoch: true }]);
      await releaseStore(store);
      if (dropEpoch) {
        const db = new Database(paths.state);
        db.exec("ALTER TABLE turns DROP COLUMN lease_epoch; VACUUM;");
        db.pragma("user_version = 6");
        db.close();
      }
      checkpoint(paths.state);
      return { paths, turn };
    };
    const turnsIn = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        return db.prepare("SELECT id, status, lease_epoch FROM turns").all();
      } finally {
        db.close();
      }
    };
    for (const [dropEpoch, pages] of [
      [true, false],
      [false, false],
      [true, true],
      [false, true],
    ] as const) {
      const { paths, turn } = await make(dropEpoch);
      // Without the schema page only the page walk finds the rows.
      if (pages) overwritePages(paths.state, [1], "zero", 1);
      const output = join(tempDir(), "new.db");
      const report = await recoverStore({ source: paths.state, output });
      expect(report.output?.integrity.status).toBe("ok");
      expect(turnsIn(output), `dropEpoch ${dropEpoch}, pages ${pages}`).toEqual([
        { id: turn, status: "interrupted", lease_epoch: dropEpoch ? 0 : 2 },
      ]);
    }
  });
});
