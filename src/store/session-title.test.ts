// Every session has a title wherever it is read: its own, else its first user message on one line,
// else a placeholder; and every listing carries what became of its last turn. Real SQLite files.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openReader, openStore, releaseStore } from "./registry.js";
import { plainTitle, sessionTitle } from "./session-title.js";

describe("session titles", () => {
  it("the plain title is the first message on one line, cut at a word to 60 characters", () => {
    expect(plainTitle("  just\na   question  ")).toBe("just a question");
    const long = plainTitle(`${"a very long question about many things ".repeat(4)}end`);
    expect(long).toBe("a very long question about many things a very long…");
    expect(long.length).toBeLessThanOrEqual(60);
    expect(plainTitle("x".repeat(100))).toHaveLength(60);
    expect(plainTitle("   ")).toBe("untitled");
  });

  it("a blank stored title does not count; no user message gives a placeholder naming the source", () => {
    expect(sessionTitle("cron: nightly", "hello", "cron")).toEqual({
      title: "cron: nightly",
      title_source: "stored",
    });
    expect(sessionTitle("  \n", "where do\nwombats sleep?", "gateway")).toEqual({
      title: "where do wombats sleep?",
      title_source: "first_message",
    });
    expect(sessionTitle(null, " \t", "cli")).toEqual({
      title: "cli session (no user message)",
      title_source: "placeholder",
    });
  });

  it("the writer, a read-only reader, and every listing show one, made when read, never stored", async () => {
    const paths = tempProfile();
    let now = 1_700_000_000_000;
    const store = await openStore(paths, {
      integrityCheckTimeoutMs: 0,
      deps: { clock: { now: () => now++ } },
    });
    const titled = await store.createSession({ title: "wombat plans", source: "gateway" });
    await store.appendMessage({ session_id: titled, role: "user", content: "where do wombats sleep?" });
    // Made by `tenax chat` (no title task there): the first user message, after a system message.
    const chat = await store.createSession();
    await store.appendMessage({ session_id: chat, role: "system", content: "you are terse" });
    await store.appendMessage({
      session_id: chat,
      role: "user",
      content: `Summarize   yesterday's deploy notes\nfor the on-call channel, ${"and much more ".repeat(80)}`,
    });
    await store.appendMessage({ session_id: chat, role: "user", content: "a second question" });
    // A multi-part message (an image and text): its text parts.
    const parts = await store.createSession({ source: "gateway" });
    await store.appendMessage({
      session_id: parts,
      role: "user",
      content: [
        { type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(5000)}` } },
        { type: "text", text: "what is in this picture?" },
      ],
    });
    const empty = await store.createSession({ source: "cron" });
    const blank = await store.createSession({ title: " \n\t" });
    await store.appendMessage({ session_id: blank, role: "user", content: "a blank title is none" });

    const expected = {
      [titled]: ["wombat plans", "stored"],
      [chat]: ["Summarize yesterday's deploy notes for the on-call…", "first_message"],
      [parts]: ["what is in this picture?", "first_message"],
      [empty]: ["cron session (no user message)", "placeholder"],
      [blank]: ["a blank title is none", "first_message"],
    };
    const shown = (list: { id: string; title: string; title_source: string }[]) =>
      Object.fromEntries(list.map((s) => [s.id, [s.title, s.title_source]]));
    expect(shown(await store.listSessions())).toEqual(expected);
    expect(
      shown(
        await Promise.all(
          [titled, chat, parts, empty, blank].map(async (id) => (await store.getSession(id))!),
        ),
      ),
    ).toEqual(expected);
    const reader = openReader(paths);
    expect(shown(await reader.listSessions())).toEqual(expected);
    reader.close();

    // A title written later (the title task) takes over; the fallback was never written.
    await store.write([{ op: "session.update", id: chat, title: "Deploy notes", updated_at: now++ }]);
    expect((await store.getSession(chat))?.title).toBe("Deploy notes");
    await releaseStore(store);
    const db = new Database(paths.state, { readonly: true });
    const raw = db.prepare("SELECT id, title FROM sessions ORDER BY rowid").all();
    db.close();
    expect(raw).toEqual([
      { id: titled, title: "wombat plans" },
      { id: chat, title: "Deploy notes" },
      { id: parts, title: null },
      { id: empty, title: null },
      { id: blank, title: " \n\t" },
    ]);
  });

  it("a damaged first message (a blob, broken parts JSON) still lists, with a title", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const blob = await store.createSession();
    await store.appendMessage({ session_id: blob, role: "user", content: "to be a blob" });
    const broken = await store.createSession();
    await store.appendMessage({ session_id: broken, role: "user", content: [{ type: "text", text: "x" }] });
    await releaseStore(store);
    const db = new Database(paths.state);
    db.prepare("UPDATE messages SET content = CAST(content AS BLOB) WHERE session_id = ?").run(blob);
    db.prepare('UPDATE messages SET content = \'[{"type": "te\' WHERE session_id = ?').run(broken);
    db.close();
    const reader = openReader(paths);
    const byId = new Map((await reader.listSessions()).map((s) => [s.id, s]));
    reader.close();
    expect(byId.get(blob)?.title).toBe("to be a blob");
    expect(byId.get(blob)?.warnings.join(" ")).toMatch(/blob/);
    expect(byId.get(broken)?.title).toBe('[{"type": "te');
  });
});

describe("the last turn in every listing", () => {
  it("is the latest turn's state and error, without reading every turn", async () => {
    const paths = tempProfile();
    let now = 1_700_000_000_000;
    const store = await openStore(paths, {
      integrityCheckTimeoutMs: 0,
      deps: { clock: { now: () => now++ } },
    });
    const ok = await store.createSession({ title: "ok" });
    const failed = await store.createSession({ title: "failed" });
    const resumed = await store.createSession({ title: "resumed" });
    await store.createSession({ title: "never" });
    for (const id of [ok, failed, resumed])
      await store.updateTurn({ id: await store.startTurn(id, 1000), status: "failed", error: "older" });
    await store.updateTurn({ id: await store.startTurn(ok, 1000), status: "completed" });
    const last = await store.startTurn(failed, 1000);
    await store.updateTurn({ id: last, status: "failed", error: `rate_limit: ${"x".repeat(1000)}` });
    await store.updateTurn({
      id: await store.startTurn(resumed, 1000),
      status: "completed",
      interrupt_count: 1,
    });
    const byTitle = new Map((await store.listSessions()).map((s) => [s.title, s.last_turn]));
    await releaseStore(store);
    expect(byTitle.get("ok")).toMatchObject({ status: "completed", state: "completed", error: null });
    expect(byTitle.get("failed")).toMatchObject({ id: last, status: "failed", state: "failed" });
    expect(byTitle.get("failed")?.error).toBe(`rate_limit: ${"x".repeat(288)}`);
    expect(byTitle.get("resumed")).toMatchObject({
      status: "completed",
      state: "resumed",
      interrupt_count: 1,
    });
    expect(byTitle.get("never")).toBeNull();
  });
});
