// Recovery of stores damaged in specific ways: garbage leaves, a garbage root and interior, a zeroed
// rightmost leaf, a truncated file, a damaged page 1. Each test knows from dbstat (taken before the
// damage) exactly which rows sat on the damaged pages, and asserts exact counts.
import { readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ProfilePaths } from "../src/profile/paths.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { releaseStore } from "../src/store/registry.js";
import { Store } from "../src/store/store.js";
import { checkpoint, overwritePages, PAGE } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import { buildStore, digests, messagesIn, pageMap, rowidsOn, type Written } from "./recover-fixtures.js";

const SEED = Number(process.env.TENAX_SEED ?? 7);

async function prepared(spec: { sessions: number; messagesPerSession: number; bigEvery?: number }) {
  const paths = tempProfile();
  const { store, written } = await buildStore(paths, { ...spec, seed: SEED });
  await releaseStore(store);
  checkpoint(paths.state);
  return { paths, written, messages: pageMap(paths.state, "messages") };
}

/** Recover into a new file; check the originals stayed byte-identical and the result opens and passes. */
async function recoverTo(paths: ProfilePaths) {
  const before = digests(paths.state);
  const output = join(tempDir(), "new.db");
  const report = await recoverStore({ source: paths.state, output });
  expect(digests(paths.state)).toEqual(before);
  expect(report.output?.integrity.status).toBe("ok");
  const store = await Store.open({
    path: output,
    searchPath: join(tempDir(), "search.db"),
    spoolDir: join(tempDir(), "spool"),
    profile: "default",
    integrityCheckTimeoutMs: 0,
  });
  const integrity = await store.checkIntegrity("full");
  store.close();
  expect(integrity.status).toBe("ok");
  return { report, output, rows: messagesIn(output) };
}

/** Every message not in `lost` came back with its id, session, seq and content. */
function expectSurvivors(written: Written, rows: ReturnType<typeof messagesIn>, lost: Set<number>) {
  for (const m of written.messages) {
    const got = rows.get(m.uid);
    if (lost.has(m.id)) expect(got).toBeUndefined();
    else
      expect(got).toEqual({ id: m.id, uid: m.uid, session_id: m.session_id, seq: m.seq, content: m.content });
  }
}

describe("recover a damaged store", () => {
  it("garbage over leaf pages in the middle: exactly their rows are lost, all others come back", async () => {
    const { paths, written, messages } = await prepared({
      sessions: 4,
      messagesPerSession: 150,
      bigEvery: 23,
    });
    const leaves = [...messages.leaves.keys()];
    const damaged = [leaves[3], leaves[10], leaves[11]].filter((p): p is number => p !== undefined);
    const lost = rowidsOn(messages, damaged);
    overwritePages(paths.state, damaged, "garbage", SEED);
    const { report, rows } = await recoverTo(paths);
    expect(report.tables.messages).toMatchObject({
      found: written.messages.length,
      salvaged: written.messages.length - lost.size,
      lost: lost.size,
      lost_is_lower_bound: false,
    });
    expect(report.tables.messages.lost_rowids).toEqual([...lost].sort((a, b) => a - b));
    expect(report.tables.sessions).toMatchObject({ found: 4, salvaged: 4, lost: 0 });
    expect(report.pages.unreadable).toBe(3);
    expect(report.complete).toBe(false);
    expectSurvivors(written, rows, lost);
  });

  it("garbage over the root and interior pages: the leaves are read from the pages, nothing is lost", async () => {
    const { paths, written, messages } = await prepared({ sessions: 5, messagesPerSession: 400 });
    expect(messages.interior.length).toBeGreaterThan(0);
    overwritePages(paths.state, messages.interior, "garbage", SEED);
    const { report, rows } = await recoverTo(paths);
    expect(report.tables.messages).toMatchObject({
      found: written.messages.length,
      salvaged: written.messages.length,
      lost: 0,
      from_sql: 0,
      from_pages: written.messages.length,
    });
    expect(report.complete).toBe(true);
    expectSurvivors(written, rows, new Set());
  });

  it("a zeroed rightmost leaf (max(rowid) fails): its rows are counted from the index", async () => {
    const { paths, written, messages } = await prepared({ sessions: 2, messagesPerSession: 200 });
    const last = [...messages.leaves.keys()].pop() ?? 0;
    const lost = rowidsOn(messages, [last]);
    overwritePages(paths.state, [last], "zero", SEED);
    const { report, rows } = await recoverTo(paths);
    expect(report.tables.messages).toMatchObject({
      found: written.messages.length,
      lost: lost.size,
      lost_is_lower_bound: false,
    });
    expectSurvivors(written, rows, lost);
  });

  it("a truncated file: rows on the pages cut off are lost, the rest come back", async () => {
    const { paths, written, messages } = await prepared({ sessions: 3, messagesPerSession: 300 });
    const total = statSync(paths.state).size / PAGE;
    const cut = 6;
    truncateSync(paths.state, (total - cut) * PAGE);
    const gone = [...messages.leaves.keys()].filter((p) => p > total - cut);
    const lost = rowidsOn(messages, gone);
    const { report, rows } = await recoverTo(paths);
    expect(report.pages.missing).toBe(cut);
    expect(report.tables.messages.salvaged).toBe(written.messages.length - lost.size);
    // The newest rows and their index entries went together: no trace is left, and the report says so.
    expect(report.tables.messages.lost_is_lower_bound).toBe(true);
    expect(report.complete).toBe(false);
    expect(report.notes.join("\n")).toMatch(/messages: the damaged part could not be bounded/);
    expectSurvivors(written, rows, lost);
  });

  it("a damaged page 1: the schema is gone, every row is read from the pages", async () => {
    const { paths, written } = await prepared({ sessions: 3, messagesPerSession: 200, bigEvery: 31 });
    overwritePages(paths.state, [1], "garbage", SEED);
    const { report, rows } = await recoverTo(paths);
    expect(report.sql.opened).toBe(false);
    expect(report.profile).toEqual({ name: "default", from: "pages" });
    expect(report.pages).toMatchObject({ page_size: 4096, page_size_from: "guess", freelist: "scanned" });
    expect(report.tables.messages).toMatchObject({
      salvaged: written.messages.length,
      lost: 0,
      lost_is_lower_bound: true,
    });
    expect(report.tables.sessions.salvaged).toBe(3);
    expect(report.complete).toBe(false);
    expectSurvivors(written, rows, new Set());
  });

  it("never resurrects a deleted session, even when its freed pages are intact", async () => {
    const paths = tempProfile();
    const { store, written } = await buildStore(paths, { sessions: 3, messagesPerSession: 300, seed: SEED });
    await store.deleteSession(written.sessions[1] ?? "");
    await releaseStore(store);
    checkpoint(paths.state);
    const deleted = new Set(
      written.messages.filter((m) => m.session_id === written.sessions[1]).map((m) => m.uid),
    );
    const messages = pageMap(paths.state, "messages");
    overwritePages(paths.state, messages.interior, "garbage", SEED);
    const { report, rows } = await recoverTo(paths);
    expect(report.pages.free).toBeGreaterThan(5);
    expect([...rows.keys()].filter((uid) => deleted.has(uid))).toEqual([]);
    expect(report.tables.messages).toMatchObject({ salvaged: 600, lost: 0 });
    expect(report.tables.sessions.salvaged).toBe(2);
  });

  it("a damaged freelist is reported, and rows from pages then need an index's word that they lived", async () => {
    const paths = tempProfile();
    const { store, written } = await buildStore(paths, { sessions: 3, messagesPerSession: 300, seed: SEED });
    await store.deleteSession(written.sessions[0] ?? "");
    await releaseStore(store);
    checkpoint(paths.state);
    const deleted = new Set(
      written.messages.filter((m) => m.session_id === written.sessions[0]).map((m) => m.uid),
    );
    const trunk = readFileSync(paths.state).readUInt32BE(32);
    expect(trunk).toBeGreaterThan(1);
    overwritePages(paths.state, [trunk, ...pageMap(paths.state, "messages").interior], "garbage", SEED);
    const { report, rows } = await recoverTo(paths);
    expect(report.pages.freelist).toBe("damaged");
    expect(report.notes.join("\n")).toMatch(/freelist trunk page \d+ is damaged/);
    expect([...rows.keys()].filter((uid) => deleted.has(uid))).toEqual([]);
    expect(report.tables.messages).toMatchObject({ salvaged: 600, lost: 0 });
    expect(report.tables.messages.from_pages).toBe(600);
  });
});
