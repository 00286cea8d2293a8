// Recovery of the records table (memory notes, todo lists, usage, compaction summaries, runs with
// their events): a WITHOUT ROWID table, read back by key from SQL and from its index pages. Each
// test knows from dbstat (taken before the damage) which records sat on the damaged pages, and
// checks every record that comes back against the store as it was: nothing lost that could be
// read, nothing made up.
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { ProfilePaths } from "../src/profile/paths.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { releaseStore } from "../src/store/registry.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import {
  buildStore,
  digests,
  pageMap,
  type RecordSpec,
  recordPages,
  recordsIn,
  type StoredRecord,
  writeRecords,
} from "./recover-fixtures.js";

const SEED = Number(process.env.TENAX_SEED ?? 11);
const SPEC: RecordSpec = { seed: SEED, notes: 120, runEvents: 400 };

/** A checkpointed store with three sessions of messages and records of every kind. */
async function prepared(spec: RecordSpec = SPEC) {
  const paths = tempProfile();
  const { store, written } = await buildStore(paths, { sessions: 3, messagesPerSession: 40, seed: SEED });
  await writeRecords(store, written.sessions, spec);
  await releaseStore(store);
  checkpoint(paths.state);
  return { paths, written, before: recordsIn(paths.state) };
}

async function recoverTo(paths: ProfilePaths) {
  const before = digests(paths.state);
  const output = join(tempDir(), "new.db");
  const report = await recoverStore({ source: paths.state, output });
  expect(digests(paths.state)).toEqual(before);
  expect(report.output?.integrity.status).toBe("ok");
  return { report, output, after: recordsIn(output) };
}

/** Exactly the records not in `lost` came back, each with every column as it was. */
function expectRecords(
  before: Map<string, StoredRecord>,
  after: Map<string, StoredRecord>,
  lost: Set<string>,
) {
  expect(new Set(after.keys())).toEqual(new Set([...before.keys()].filter((k) => !lost.has(k))));
  for (const [key, record] of after) expect(record).toEqual(before.get(key));
}

const kinds = (records: Map<string, StoredRecord>) => new Set([...records.values()].map((r) => r.kind));

describe("recover the records table", () => {
  it("brings every record back, overflow pages and all, when other tables are damaged", async () => {
    const { paths, before } = await prepared();
    expect(kinds(before)).toEqual(
      new Set(["memory", "todo", "usage", "compaction", "run", "run_event", "run_idem"]),
    );
    const messageLeaf = [...pageMap(paths.state, "messages").leaves.keys()][1] ?? 0;
    overwritePages(paths.state, [messageLeaf], "garbage", SEED);
    const { report, after } = await recoverTo(paths);
    expect(report.tables.records).toMatchObject({
      found: before.size,
      salvaged: before.size,
      lost: 0,
      lost_is_lower_bound: false,
      from_sql: before.size,
      from_pages: 0,
      lost_keys: [],
    });
    expect(report.output?.written.records).toBe(before.size);
    expect(report.tables.messages.lost).toBeGreaterThan(0);
    expectRecords(before, after, new Set());
  });

  it("garbage over the records b-tree's interior pages: the leaves come back from the pages", async () => {
    const { paths, before } = await prepared();
    const map = recordPages(paths.state);
    expect(map.interior.size).toBeGreaterThan(0);
    overwritePages(paths.state, [...map.interior.keys()], "garbage", SEED);
    const { report, after } = await recoverTo(paths);
    // An index b-tree keeps entries on its interior pages too: those go with the pages.
    const lost = new Set([...map.interior.values()].flat());
    const known = [...lost].filter((k) => before.get(k)?.session_id !== null);
    expect(lost.size).toBeGreaterThan(0);
    expect(report.tables.records).toMatchObject({
      salvaged: before.size - lost.size,
      from_sql: 0,
      from_pages: before.size - lost.size,
      // Session-bound records are listed by the index on session_id; global ones leave no trace.
      found: before.size - lost.size + known.length,
      lost: known.length,
      lost_is_lower_bound: true,
    });
    expect(report.complete).toBe(false);
    expectRecords(before, after, lost);
  });

  it("destroyed records leaves: fewer come back, never one that was not there", async () => {
    const { paths, before } = await prepared();
    const map = recordPages(paths.state);
    const leafOf = (kind: string) =>
      [...map.leaves].find(
        ([, keys]) => keys.length > 0 && keys.every((k) => before.get(k)?.kind === kind),
      )?.[0];
    const notes = leafOf("memory");
    const events = leafOf("run_event");
    if (notes === undefined || events === undefined)
      throw new Error("no leaf holds only notes or only events");
    overwritePages(paths.state, [notes], "zero", SEED);
    overwritePages(paths.state, [events], "garbage", SEED);
    const lostNotes = map.leaves.get(notes) ?? [];
    const lostEvents = map.leaves.get(events) ?? [];
    const lost = new Set([...lostNotes, ...lostEvents]);
    const { report, after } = await recoverTo(paths);
    const r = report.tables.records;
    expect(r).toMatchObject({
      salvaged: before.size - lost.size,
      found: before.size - lostNotes.length,
      lost: lostEvents.length,
      lost_is_lower_bound: true,
    });
    // SQL reads on from past each damaged leaf, so it vouches for all but the leaves and the entry
    // just past each of them, which a seek cannot reach without passing through the leaf.
    expect(r.from_sql + r.from_pages).toBe(r.salvaged);
    expect(r.from_pages).toBeLessThanOrEqual(2);
    const lostKeys = report.tables.records.lost_keys?.map((k) => JSON.stringify([k.kind, k.key]));
    expect(lostKeys).toEqual(lostEvents);
    expect(report.notes.join("\n")).toMatch(/records: the damaged part could not be bounded/);
    expectRecords(before, after, lost);
  });

  it("a record whose session row was lost is kept under a placeholder session, as its messages are", async () => {
    const paths = tempProfile();
    const { store, written } = await buildStore(paths, { sessions: 2, messagesPerSession: 30, seed: SEED });
    const quiet = await store.createSession({ title: "records only" });
    await writeRecords(store, [...written.sessions, quiet], { seed: SEED, notes: 5, runEvents: 3 });
    await releaseStore(store);
    checkpoint(paths.state);
    const before = recordsIn(paths.state);
    const sessionPages = btreePages(paths.state, "sessions").map((p) => p.pageno);
    overwritePages(paths.state, sessionPages, "garbage", SEED);
    const { report, output, after } = await recoverTo(paths);
    expect(report.tables.sessions.salvaged).toBe(0);
    expect(report.output?.written).toMatchObject({ sessions: 0, placeholder_sessions: 3 });
    expectRecords(before, after, new Set());
    const db = new Database(output, { readonly: true });
    const placeholder = db.prepare("SELECT title, source FROM sessions WHERE id = ?").get(quiet);
    db.close();
    expect(placeholder).toEqual({ title: "(recovered: session record lost)", source: "recovered" });
    const bound = [...before.values()].filter((r) => r.session_id !== null).length;
    expect(report.notes.join("\n")).toContain(`records: ${bound} belong to sessions whose own row was lost`);
  });
});
