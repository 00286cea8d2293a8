import { mkdirSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { StoreOpenError } from "./errors.js";
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations.js";
import { openReader, openStore, releaseStore } from "./registry.js";

describe("forward-only migrations", () => {
  it("bring a store of the first schema up to date without touching its rows", async () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    // A store as the first release of Tenax left it: schema 1, one session with a message.
    const old = new Database(paths.state);
    old.pragma("journal_mode = WAL");
    old.exec(MIGRATIONS[0]?.sql ?? "");
    old.pragma("user_version = 1");
    old.exec(`INSERT INTO meta (key, value) VALUES ('profile', 'default'), ('store_id', 'st_old');
              INSERT INTO sessions (id, title, source, created_at, updated_at) VALUES ('s_old', 'kept', 'cli', 1, 2);
              INSERT INTO messages (uid, session_id, seq, role, content, created_at) VALUES ('m_old', 's_old', 1, 'user', 'hello', 2);`);
    old.close();
    expect(SCHEMA_VERSION).toBeGreaterThan(1);

    // A reader never writes, and needs no upgrade to read what version 1 already had.
    const reader = openReader(paths);
    expect((await reader.getMessages("s_old")).map((m) => m.content)).toEqual(["hello"]);
    reader.close();

    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    expect((await store.stats()).schema_version).toBe(SCHEMA_VERSION);
    expect((await store.getMessages("s_old")).map((m) => [m.uid, m.content])).toEqual([["m_old", "hello"]]);
    const appended = await store.appendMessage({ session_id: "s_old", role: "assistant", content: "hi" });
    expect(appended.seq).toBe(2);
    await releaseStore(store);

    const check = new Database(paths.state, { readonly: true });
    const tables = check.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all();
    check.close();
    expect(tables).toEqual(
      expect.arrayContaining([
        "sessions",
        "messages",
        "turns",
        "credential_state",
        "records",
        "responses",
        "instances",
      ]),
    );
  });

  it("leave one running turn per session, the newest, before the index that keeps it so", async () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    // A store of schema 7 where an earlier Tenax let two processes run turns in one session at once.
    const old = new Database(paths.state);
    old.pragma("journal_mode = WAL");
    for (const m of MIGRATIONS.filter((m) => m.version <= 7)) old.exec(m.sql);
    old.pragma("user_version = 7");
    old.exec(`INSERT INTO meta (key, value) VALUES ('profile', 'default'), ('store_id', 'st_old');
              INSERT INTO sessions (id, title, source, created_at, updated_at) VALUES ('s_two', 't', 'cli', 1, 2), ('s_one', 't', 'cli', 1, 2);
              INSERT INTO turns (id, session_id, status, started_at, lease_owner, lease_expires_at, lease_epoch) VALUES
                ('t_old', 's_two', 'running', 10, 'pid:1', 99, 1),
                ('t_tie_a', 's_two', 'running', 20, 'pid:2', 99, 1),
                ('t_tie_b', 's_two', 'running', 20, 'pid:3', 99, 1),
                ('t_alone', 's_one', 'running', 10, 'pid:4', 99, 1),
                ('t_done', 's_one', 'completed', 5, NULL, NULL, 1);`);
    old.close();

    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const status = async (sid: string) =>
      (await store.getTurns(sid)).map((t) => [t.id, t.status, t.lease_epoch, t.lease_expires_at]);
    // The newest (the later row of two started in the same millisecond) keeps running; the others
    // are interrupted at a new epoch, so a holder that still runs has its writes refused.
    expect(await status("s_two")).toEqual([
      ["t_old", "interrupted", 2, null],
      ["t_tie_a", "interrupted", 2, null],
      ["t_tie_b", "running", 1, 99],
    ]);
    expect(await status("s_one")).toEqual([
      ["t_done", "completed", 1, null],
      ["t_alone", "running", 1, 99],
    ]);
    expect((await store.getTurns("s_two"))[0]?.error).toMatch(/one turn at a time/);
    const refused = await store.startTurn("s_two", 1_000).catch((e: unknown) => e);
    expect((refused as { code?: string }).code).toBe("turn_running");
    await releaseStore(store);
  });

  it("a reader refuses a file whose schema was never created, with the command that creates it", async () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    const empty = new Database(paths.state);
    empty.exec("CREATE TABLE scratch (x)");
    empty.exec("DROP TABLE scratch"); // a real SQLite file at schema 0
    empty.close();
    expect(() => openReader(paths)).toThrow(StoreOpenError);
    expect(() => openReader(paths)).toThrow(/schema version 0 and must be upgraded/);
  });
});
