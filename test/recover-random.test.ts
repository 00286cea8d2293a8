// Randomized damage over several seeds: random stores (big messages on overflow pages, deleted
// sessions on the freelist, records of every kind), random garbage or zeroed pages in the tables and
// their indexes. Each run prints its seed; rerun one with TENAX_SEED=N (and TENAX_SEEDS=count for more).
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../src/core/deps.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { releaseStore } from "../src/store/registry.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import {
  buildStore,
  digests,
  messagesIn,
  pageMap,
  recordPages,
  recordsIn,
  writeRecords,
} from "./recover-fixtures.js";

const FIRST = Number(process.env.TENAX_SEED ?? 1000);
const COUNT = Number(process.env.TENAX_SEEDS ?? 6);
const TARGETS = [
  "messages",
  "sessions",
  "turns",
  "sqlite_autoindex_messages_1",
  "sqlite_autoindex_messages_2",
  "records",
  "records_session",
];

function sessionIds(path: string): Set<string> {
  const db = new Database(path, { readonly: true });
  try {
    return new Set(db.prepare("SELECT id FROM sessions").pluck().all() as string[]);
  } finally {
    db.close();
  }
}

async function runSeed(seed: number): Promise<void> {
  console.log(`recover-random seed=${seed}`);
  const random = seededRandom(seed);
  const pick = (n: number) => Math.floor(random() * n);
  const paths = tempProfile();
  const { store, written } = await buildStore(paths, {
    sessions: 3 + pick(4),
    messagesPerSession: 40 + pick(220),
    seed,
    bigEvery: random() < 0.5 ? 0 : 5 + pick(30),
  });
  await writeRecords(store, written.sessions, { seed, notes: pick(100), runEvents: pick(300) });
  const deleted = new Set<string>();
  if (random() < 0.6) {
    const victim = written.sessions[pick(written.sessions.length)] ?? "";
    await store.deleteSession(victim);
    for (const m of written.messages) if (m.session_id === victim) deleted.add(m.uid);
  }
  await releaseStore(store);
  checkpoint(paths.state);
  const recordsBefore = recordsIn(paths.state);
  const recordMap = recordPages(paths.state);

  const map = pageMap(paths.state, "messages");
  const sessionMap = pageMap(paths.state, "sessions");
  const candidates = TARGETS.flatMap((name) => btreePages(paths.state, name).map((p) => ({ name, ...p })));
  const damaged = new Set<number>();
  for (let i = 1 + pick(6); i > 0; i--) damaged.add(candidates[pick(candidates.length)]?.pageno ?? 2);
  const pages = [...damaged].filter((p) => p > 1);
  overwritePages(paths.state, pages, random() < 0.5 ? "garbage" : "zero", seed);
  const touched = candidates.filter((c) => damaged.has(c.pageno)).map((c) => `${c.name}:${c.pagetype}`);
  console.log(`  damaged ${pages.join(",")} (${touched.join(" ")})`);

  const lostIds = new Set<number>();
  for (const p of pages) for (const r of map.leaves.get(p) ?? []) lostIds.add(r);
  for (const [p, owner] of map.overflow) if (damaged.has(p)) lostIds.add(owner);
  const live = written.messages.filter((m) => !deleted.has(m.uid));
  const expected = live.filter((m) => !lostIds.has(m.id));

  const before = digests(paths.state);
  const output = join(tempDir(), "new.db");
  const report = await recoverStore({ source: paths.state, output });
  expect(digests(paths.state)).toEqual(before);
  expect(report.output?.integrity.status).toBe("ok");

  // Records: exactly those on undamaged pages come back, each as it was; a deleted session's never.
  const lostRecords = new Set<string>();
  for (const p of pages) {
    for (const k of [...(recordMap.leaves.get(p) ?? []), ...(recordMap.interior.get(p) ?? [])])
      lostRecords.add(k);
    const owner = recordMap.overflow.get(p);
    if (owner !== undefined) lostRecords.add(owner);
  }
  const recordsAfter = recordsIn(output);
  expect(new Set(recordsAfter.keys())).toEqual(
    new Set([...recordsBefore.keys()].filter((k) => !lostRecords.has(k))),
  );
  for (const [k, r] of recordsAfter) expect(r).toEqual(recordsBefore.get(k));
  const rt = report.tables.records;
  expect(rt).toMatchObject({ salvaged: recordsBefore.size - lostRecords.size, found: rt.salvaged + rt.lost });
  if (!rt.lost_is_lower_bound) expect(rt.lost).toBe(lostRecords.size);

  const rows = messagesIn(output);
  expect(new Set(rows.keys())).toEqual(new Set(expected.map((m) => m.uid)));
  for (const m of expected) {
    expect(rows.get(m.uid)).toEqual({
      id: m.id,
      uid: m.uid,
      session_id: m.session_id,
      seq: m.seq,
      content: m.content,
    });
  }
  const t = report.tables.messages;
  expect(t.salvaged).toBe(expected.length);
  expect(t.found).toBe(t.salvaged + t.lost);
  const uidIndexIntact = !candidates.some(
    (c) => c.name === "sqlite_autoindex_messages_1" && damaged.has(c.pageno),
  );
  if (uidIndexIntact) expect(t).toMatchObject({ found: live.length, lost: live.length - expected.length });
  if (!t.lost_is_lower_bound) expect(t.lost).toBeGreaterThanOrEqual(live.length - expected.length);
  expect(report.complete).toBe(
    expected.length === live.length &&
      report.tables.sessions.lost === 0 &&
      !t.lost_is_lower_bound &&
      report.tables.turns.lost === 0 &&
      !report.tables.sessions.lost_is_lower_bound &&
      !report.tables.turns.lost_is_lower_bound &&
      rt.lost === 0 &&
      !rt.lost_is_lower_bound,
  );

  // Sessions on undamaged pages survive; every message has a session row (a placeholder if need be).
  const sessionsOut = sessionIds(output);
  const damagedSessionLeaves = [...sessionMap.leaves.keys()].filter((p) => damaged.has(p));
  if (damagedSessionLeaves.length === 0) {
    for (const s of written.sessions)
      if (![...deleted].length || live.some((m) => m.session_id === s)) expect(sessionsOut.has(s)).toBe(true);
  }
  for (const m of rows.values()) expect(sessionsOut.has(m.session_id)).toBe(true);
}

describe("recover after random damage", () => {
  for (let seed = FIRST; seed < FIRST + COUNT; seed++) {
    it(`seed ${seed}`, () => runSeed(seed));
  }
});
