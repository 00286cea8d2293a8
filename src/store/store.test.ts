import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { checkpoint } from "../../test/helpers/corrupt.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { StoreOpenError } from "./errors.js";
import { openReader, openStore, releaseStore } from "./registry.js";
import { BROAD_MATCHES } from "./search-index.js";
import { readSpool, Spool } from "./spool.js";

describe("store basics", () => {
  it("stores sessions and messages with per-session sequence numbers and reads them back", async () => {
    const paths = tempProfile();
    let now = 1_700_000_000_000;
    const clock = { now: () => now++ }; // strictly increasing, so "most recent" is well defined
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps: { clock } });
    const a = await store.createSession({ title: "first" });
    const b = await store.createSession({ title: "second" });
    await store.appendMessage({ session_id: a, role: "user", content: "hello there" });
    await store.appendMessage({ session_id: b, role: "user", content: "other" });
    const reply = await store.appendMessage({
      session_id: a,
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "function", function: { name: "terminal", arguments: '{"command":"ls"}' } },
      ],
    });
    await store.appendMessage({ session_id: a, role: "tool", content: "file.txt", tool_call_id: "c1" });
    expect(reply.seq).toBe(2);
    const messages = await store.getMessages(a);
    expect(messages.map((m) => [m.seq, m.role])).toEqual([
      [1, "user"],
      [2, "assistant"],
      [3, "tool"],
    ]);
    expect(messages[1]?.tool_calls).toEqual([
      { id: "c1", type: "function", function: { name: "terminal", arguments: '{"command":"ls"}' } },
    ]);
    expect(messages[2]?.tool_call_id).toBe("c1");
    // Most recently updated first: "first" got its last message after "second" was written.
    expect((await store.listSessions()).map((s) => [s.title, s.message_count])).toEqual([
      ["first", 3],
      ["second", 1],
    ]);
    await releaseStore(store);
  });

  it("hands every caller in a process the same writer", async () => {
    const paths = tempProfile();
    const one = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const two = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    expect(two).toBe(one);
    await releaseStore(one);
    expect(one.health().writable).toBe(true);
    await releaseStore(two);
    expect(one.health().writable).toBe(false);
  });

  it("writes made together commit together, in call order; a write that fails is refused alone", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "group" });
    checkpoint(paths.state); // an empty WAL, so what the writes add can be counted
    // Twenty writes in one turn of the event loop (as concurrent turns make them), one of them bad.
    const writes = Array.from({ length: 20 }, (_, i) =>
      i === 7
        ? store.appendMessage({ session_id: "s_missing", role: "user", content: "to nowhere" })
        : store.appendMessage({ session_id: session, role: "user", content: `message ${i}` }),
    );
    const settled = await Promise.allSettled(writes);
    expect(settled.map((r) => r.status)).toEqual(settled.map((_, i) => (i === 7 ? "rejected" : "fulfilled")));
    expect((settled[7] as PromiseRejectedResult).reason.code).toBe("store_unknown_session");
    // Committed in the order they were made, with contiguous sequence numbers.
    expect((await store.getMessages(session)).map((m) => [m.seq, m.content])).toEqual(
      Array.from({ length: 19 }, (_, k) => [k + 1, `message ${k < 7 ? k : k + 1}`]),
    );
    // One group, one commit: each commit appends every page it changed to the WAL (4 KiB and a
    // 24-byte header a frame), so nineteen commits would add well over nineteen frames.
    const frames = (statSync(`${paths.state}-wal`).size - 32) / (4096 + 24);
    expect(frames).toBeGreaterThan(0);
    expect(frames).toBeLessThan(19);
    await releaseStore(store);
  });

  it("a turn starts with its question in one write: the message carries the turn's id", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "turn" });
    const turn = await store.startTurn(session, 60_000, undefined, { role: "user", content: "the question" });
    expect((await store.getTurns(session)).map((t) => [t.id, t.status])).toEqual([[turn, "running"]]);
    expect((await store.getMessages(session)).map((m) => [m.role, m.content, m.turn_id])).toEqual([
      ["user", "the question", turn],
    ]);
    // An unknown session refuses both: never a turn without its question, nor the reverse.
    await expect(
      store.startTurn("s_missing", 60_000, undefined, { role: "user", content: "x" }),
    ).rejects.toThrow(/does not exist/);
    expect((await store.runningTurns()).map((t) => t.id)).toEqual([turn]);
    await releaseStore(store);
  });

  it("a write left waiting when the store closes is committed, not dropped", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "closing" });
    const late = store.appendMessage({ session_id: session, role: "user", content: "just before close" });
    await releaseStore(store);
    await expect(late).resolves.toMatchObject({ seq: 1 });
    const reader = openReader(paths);
    try {
      expect((await reader.getMessages(session)).map((m) => m.content)).toEqual(["just before close"]);
    } finally {
      reader.close();
    }
  });

  it("a message uid makes appends idempotent", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const s = await store.createSession();
    const first = await store.appendMessage({ session_id: s, role: "user", content: "x", uid: "m_fixed" });
    const again = await store.appendMessage({ session_id: s, role: "user", content: "x", uid: "m_fixed" });
    expect(again).toEqual({ ...first, duplicate: true });
    expect(await store.getMessages(s)).toHaveLength(1);
    await releaseStore(store);
  });

  it("refuses to open another profile's store, naming both", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await releaseStore(store);
    const other = { ...paths, name: "work" };
    await expect(openStore(other, { integrityCheckTimeoutMs: 0 })).rejects.toThrow(
      /session store of profile 'default', not of profile 'work'/,
    );
    expect(() => openReader(other)).toThrow(StoreOpenError);
  });

  it("refuses a store written by a newer schema without touching it", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await releaseStore(store);
    const raw = new Database(paths.state);
    raw.pragma("user_version = 99");
    raw.close();
    const before = readFileSync(paths.state);
    await expect(openStore(paths, { integrityCheckTimeoutMs: 0 })).rejects.toThrow(
      /schema version 99.*newer Tenax/,
    );
    expect(readFileSync(paths.state).equals(before)).toBe(true);
  });

  it("refuses a file that is not a database and one of another program", async () => {
    const paths = tempProfile();
    const { writeFileSync, mkdirSync } = await import("node:fs");
    mkdirSync(paths.dir, { recursive: true });
    writeFileSync(paths.state, "this is a text file, not a database\n".repeat(10));
    await expect(openStore(paths, { integrityCheckTimeoutMs: 0 })).rejects.toThrow(/not a SQLite database/);
    const foreign = tempProfile();
    mkdirSync(foreign.dir, { recursive: true });
    const db = new Database(foreign.state);
    db.exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY)");
    db.close();
    await expect(openStore(foreign, { integrityCheckTimeoutMs: 0 })).rejects.toThrow(/another program/);
  });

  it("searches message text and tool arguments, and says how much is still pending", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.index.rebuild();
    const s = await store.createSession();
    await store.appendMessage({ session_id: s, role: "user", content: "Please deploy the kangaroo service" });
    await store.appendMessage({
      session_id: s,
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "c",
          type: "function",
          function: { name: "terminal", arguments: '{"command":"systemctl restart wombat"}' },
        },
      ],
    });
    const result = await store.search("kangaroo");
    expect(result.hits.map((h) => h.message.content)).toEqual(["Please deploy the kangaroo service"]);
    expect(result.hits[0]?.snippet).toContain("kangaroo");
    expect((await store.search("wombat")).hits).toHaveLength(1);
    expect(await store.search('"deploy the" -- (')).toMatchObject({ pending: 0 });
    await store.deleteSession(s);
    expect((await store.search("kangaroo")).hits).toHaveLength(0);
    await releaseStore(store);
    const reader = openReader(paths);
    expect((await reader.search("kangaroo")).hits).toHaveLength(0);
    reader.close();
  });

  it("shows bad rows with warnings instead of failing the listing", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const good = await store.createSession({ title: "good" });
    await store.appendMessage({ session_id: good, role: "user", content: "fine" });
    await releaseStore(store);
    const raw = new Database(paths.state);
    raw.exec(`
      INSERT INTO sessions (id, title, source, created_at, updated_at) VALUES ('s_text', 'text time', 'cli', 'yesterday', 'later');
      INSERT INTO sessions (id, title, source, created_at, updated_at, metadata) VALUES ('s_huge', 'huge', 'cli', 1e30, 1e30, '{broken');
      INSERT INTO messages (uid, session_id, seq, role, content, tool_calls, created_at) VALUES ('u1', 's_huge', 1, 'assistant', 'hi', '[{not json', 'noon');
    `);
    raw.close();
    const reader = openReader(paths);
    const sessions = await reader.listSessions();
    expect(sessions).toHaveLength(3);
    const byId = new Map(sessions.map((s) => [s.id, s]));
    expect(byId.get("s_text")?.warnings.join()).toMatch(/created_at is string "yesterday", not a timestamp/);
    expect(byId.get("s_huge")?.warnings.join()).toMatch(
      /created_at 1e\+30 is out of range.*metadata is not valid JSON/,
    );
    expect(byId.get(good)?.warnings).toEqual([]);
    const [message] = await reader.getMessages("s_huge");
    expect(message?.warnings.join()).toMatch(/tool_calls is not valid JSON/);
    expect(message?.created_at).toBeNull();
    expect((await reader.stats()).bad_rows).toEqual({ sessions: 2, messages: 1 });
    reader.close();
  });

  it("reads the spool back in order, reporting a line torn by a crash instead of failing", async () => {
    expect(readSpool("/nonexistent/spool")).toEqual({ files: [], records: [], skipped: [] });
    expect(existsSync("/nonexistent/spool")).toBe(false);
    const paths = tempProfile();
    const spool = new Spool(paths.spool, "default", paths.state);
    const op = (id: string) => ({ op: "session.delete" as const, id });
    const file = spool.append([op("s_1")], "corrupt", 1);
    spool.append([op("s_2"), op("s_3")], "corrupt", 2);
    spool.close();
    appendFileSync(file, '{"v":1,"spooled_at":3,"ops":[{"op":"sess'); // cut mid-line, as kill -9 can
    const read = readSpool(paths.spool);
    expect(read.files).toEqual([file]);
    expect(read.records.map((r) => r.ops.map((o) => (o.op === "session.delete" ? o.id : "?")))).toEqual([
      ["s_1"],
      ["s_2", "s_3"],
    ]);
    expect(read.skipped).toEqual([{ file, line: 3, reason: expect.any(String) }]);
  });
});

describe("closing the store", () => {
  it("indexes what it wrote before it closes, so a short-lived process leaves nothing pending", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.index.rebuild();
    const s = await store.createSession();
    await store.appendMessage({ session_id: s, role: "user", content: "ephemeral echidna" });
    await releaseStore(store);
    const reader = openReader(paths);
    const result = await reader.search("echidna");
    reader.close();
    expect(result).toMatchObject({ pending: 0, hits: [{ session_id: s }] });
  });
});

describe("search order", () => {
  it("ranks specific words by relevance and falls back to newest first for very broad ones", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0, synchronous: "normal" });
    await store.index.rebuild();
    const s = await store.createSession();
    await store.appendMessages(
      Array.from({ length: BROAD_MATCHES + 10 }, (_, i) => ({
        session_id: s,
        role: "user",
        content: i % 500 === 0 ? `common gecko gecko gecko ${i}` : `common filler ${i}`,
      })),
    );
    const specific = await store.search("gecko", { limit: 3 });
    expect(specific.order).toBe("relevance");
    expect(specific.hits).toHaveLength(3);
    const broad = await store.search("common", { limit: 5 });
    expect(broad.order).toBe("recent");
    expect(broad.hits.map((h) => h.message.seq)).toEqual([2010, 2009, 2008, 2007, 2006]);
    // Both words must match; one broad word is enough to switch to newest first.
    const both = await store.search("common gecko", { limit: 10 });
    expect(both.order).toBe("recent");
    expect(both.hits.map((h) => h.message.seq)).toEqual([2001, 1501, 1001, 501, 1]);
    await releaseStore(store);
  });
});

describe("a batch in one transaction", () => {
  it("numbers each session's messages in order and stamps updated_at with the latest", async () => {
    const paths = tempProfile();
    let now = 1_800_000_000_000;
    const store = await openStore(paths, {
      integrityCheckTimeoutMs: 0,
      deps: { clock: { now: () => now++ } },
    });
    const a = await store.createSession();
    const b = await store.createSession();
    await store.appendMessage({ session_id: a, role: "user", content: "a1" });
    const results = await store.appendMessages([
      { session_id: b, role: "user", content: "b1" },
      { session_id: a, role: "user", content: "a2" },
      { session_id: b, role: "user", content: "b2", uid: "m_dup" },
      { session_id: b, role: "user", content: "b2 again", uid: "m_dup" },
      { session_id: a, role: "user", content: "a3" },
    ]);
    expect(results.map((r) => [r.seq, r.duplicate])).toEqual([
      [1, false],
      [2, false],
      [2, false],
      [2, true],
      [3, false],
    ]);
    expect((await store.getMessages(a)).map((m) => m.content)).toEqual(["a1", "a2", "a3"]);
    expect((await store.getMessages(b)).map((m) => m.content)).toEqual(["b1", "b2"]);
    const last = (await store.getMessages(a)).at(-1)?.created_at;
    expect((await store.getSession(a))?.updated_at).toBe(last);
    // A batch that fails part way leaves nothing behind.
    await expect(
      store.appendMessages([
        { session_id: a, role: "user", content: "a4" },
        { session_id: "s_missing", role: "user", content: "nope" },
      ]),
    ).rejects.toThrow(/session s_missing does not exist/);
    expect(await store.getMessages(a)).toHaveLength(3);
    // A session op later in the batch does not lose the updated_at its earlier messages set.
    const m1 = store.messageOp({ session_id: a, role: "user", content: "a4" });
    const m2 = store.messageOp({ session_id: a, role: "user", content: "a5" });
    await store.write([m1, m2, { op: "session.update", id: a, title: "renamed", updated_at: 1 }]);
    expect(await store.getSession(a)).toMatchObject({
      title: "renamed",
      updated_at: m2.op === "message.append" ? m2.created_at : -1,
    });
    await releaseStore(store);
  });
});
