// Torture: the corruption matrix. Garbage, zeroed and truncated pages in each of the store's files
// (state.db, its WAL, the search index search.db), each under a running writer: the damage must be
// detected (the store fails fast with its corrupt error, or search degrades and rebuilds), writes
// after the detection must go to the spool, and recover --output plus restore (or the rebuild)
// must bring back every acknowledged message the damage itself did not destroy. The rows on the
// damaged pages are known beforehand (dbstat, WAL frame numbers), so the counts are exact; a table
// of case, how it was detected and messages recovered/expected is printed at the end.
import { readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { seededRandom } from "../src/core/deps.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { StoreCorruptError } from "../src/store/errors.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { restoreStore } from "../src/store/recover/restore.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store, StoreEvent } from "../src/store/store.js";
import { checkpoint, garbageAfterHeader, overwriteBytes, overwritePages, PAGE } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import { tortureSeed } from "./helpers/torture.js";
import { buildStore, content, pageMap, rowidsOn } from "./recover-fixtures.js";

const SEED = tortureSeed("torture-corruption");
const WAL_HEADER = 32;
const FRAME = 24 + PAGE;
const BATCHES = 5;

type Damage = "garbage" | "zeroed" | "truncated";
type Target = "state.db" | "WAL" | "search.db";

interface Row {
  case: string;
  detected: string;
  recovered: number;
  expected: number;
  destroyed: number;
  spooled: number;
}
const table: Row[] = [];

afterAll(() => {
  if (table.length === 0) return;
  const lines = table.map(
    (r) =>
      `${r.case.padEnd(22)} ${r.detected.padEnd(48)} ${`${r.recovered}/${r.expected}`.padStart(9)}  destroyed by the damage ${r.destroyed}, spooled ${r.spooled}`,
  );
  console.log(
    `torture-corruption (seed=${SEED}):\n${"case".padEnd(22)} ${"detected how".padEnd(48)} ${"recovered".padStart(9)}\n${lines.join("\n")}`,
  );
});

/** A store of 3 sessions, checkpointed, then BATCHES transactions of 20 messages left in the WAL. */
async function filled(paths: ProfilePaths, seed: number, indexing: boolean) {
  const { store, written } = await buildStore(paths, { sessions: 3, messagesPerSession: 120, seed });
  store.index.flush();
  // Without index flushes each batch below is exactly one transaction in the WAL.
  if (!indexing) store.index.stop();
  checkpoint(paths.state);
  const uids = new Map(written.messages.map((m) => [m.uid, m.id]));
  const session = written.sessions[0] ?? "";
  const batches: { uids: string[]; framesAfter: number }[] = [];
  const random = seededRandom(seed + 1);
  for (let b = 0; b < BATCHES; b++) {
    const ops = Array.from({ length: 20 }, () =>
      store.messageOp({ session_id: session, role: "user", content: content(random, false) }),
    );
    const results = await store.write(ops);
    const batch: string[] = [];
    ops.forEach((op, i) => {
      if (op.op !== "message.append") return;
      batch.push(op.uid);
      uids.set(op.uid, results[i]?.message?.id ?? 0);
    });
    batches.push({ uids: batch, framesAfter: frames(paths.state) });
  }
  if (indexing) store.index.flush();
  return { store, written, uids, batches, sessions: written.sessions };
}

const frames = (state: string) => Math.floor((statSync(`${state}-wal`).size - WAL_HEADER) / FRAME);

/** The index (0-based) of the last WAL frame holding `page`. */
function lastFrameOf(state: string, page: number): number {
  const count = frames(state);
  const data = readFileSync(`${state}-wal`);
  for (let i = count - 1; i >= 0; i--) if (data.readUInt32BE(WAL_HEADER + i * FRAME) === page) return i;
  throw new Error(`page ${page} is in no WAL frame`);
}

/** The rightmost leaf of the messages table: every append reads and writes it. */
function rightmostLeaf(state: string) {
  const map = pageMap(state, "messages");
  const leaves = [...map.leaves.keys()];
  return { map, leaf: leaves[leaves.length - 1] ?? 0 };
}

/** Damage one of the files; returns the uids of messages the damage itself destroys. */
function damage(
  paths: ProfilePaths,
  target: Target,
  kind: Damage,
  seed: number,
  fixture: Awaited<ReturnType<typeof filled>>,
): Set<string> {
  const destroyedIds = new Set<number>();
  if (target === "state.db") {
    // Everything in the main file first, so the damage is not shadowed by newer copies in the WAL.
    checkpoint(paths.state);
    const { map, leaf } = rightmostLeaf(paths.state);
    const pages = kind === "truncated" ? Math.floor(statSync(paths.state).size / PAGE) : leaf;
    const cut = kind === "truncated" ? [...Array(pages - leaf + 1).keys()].map((i) => leaf + i) : [leaf];
    if (kind === "truncated") truncateSync(paths.state, (leaf - 1) * PAGE);
    else overwritePages(paths.state, cut, kind === "garbage" ? "garbage" : "zero", seed);
    for (const id of rowidsOn(map, cut)) destroyedIds.add(id);
  } else if (target === "WAL") {
    const { leaf } = rightmostLeaf(paths.state);
    const frame = lastFrameOf(paths.state, leaf);
    const offset = WAL_HEADER + frame * FRAME;
    if (kind === "truncated") truncateSync(`${paths.state}-wal`, offset);
    else
      overwriteBytes(`${paths.state}-wal`, offset + 24, PAGE, kind === "garbage" ? "garbage" : "zero", seed);
    // Recovery replays the WAL up to the last good commit: every batch from the damaged frame on is gone.
    const first = fixture.batches.findIndex((b) => b.framesAfter > frame);
    const gone = new Set(fixture.batches.slice(Math.max(first, 0)).flatMap((b) => b.uids));
    return gone;
  } else {
    checkpoint(paths.search);
    const pages = Math.floor(statSync(paths.search).size / PAGE);
    if (kind === "garbage") garbageAfterHeader(paths.search, seed);
    else if (kind === "zeroed")
      overwritePages(
        paths.search,
        Array.from({ length: pages - 1 }, (_, i) => i + 2),
        "zero",
        seed,
      );
    else truncateSync(paths.search, 2 * PAGE);
    return new Set();
  }
  const byId = new Map([...fixture.uids].map(([uid, id]) => [id, uid]));
  return new Set([...destroyedIds].map((id) => byId.get(id) ?? ""));
}

function waitFor(store: Store, type: StoreEvent["type"], ms: number): Promise<StoreEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} event within ${ms} ms`)), ms);
    const off = store.on((e) => {
      if (e.type !== type) return;
      clearTimeout(timer);
      off();
      resolve(e);
    });
  });
}

/** Every message uid in the profile's store, read through a fresh writer (which also checks it). */
async function storedUids(paths: ProfilePaths): Promise<Set<string>> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    expect((await store.checkIntegrity("full")).status).toBe("ok");
    return new Set(
      (
        await Promise.all(
          (
            await store.listSessions({ limit: 1000 })
          ).map(async (s) => (await store.getMessages(s.id)).map((m) => m.uid)),
        )
      ).flat(),
    );
  } finally {
    await releaseStore(store);
  }
}

const CASES: [Target, Damage][] = (["state.db", "WAL", "search.db"] as const).flatMap((t) =>
  (["garbage", "zeroed", "truncated"] as const).map((k): [Target, Damage] => [t, k]),
);

describe("torture: corruption matrix", () => {
  it.each(CASES)(
    "%s with %s pages: detected, spooled, recovered",
    async (target, kind) => {
      const seed = SEED + CASES.findIndex(([t, k]) => t === target && k === kind);
      const paths = tempProfile();
      const fixture = await filled(paths, seed, target === "search.db");
      const { store } = fixture;
      const acknowledged = new Set(fixture.uids.keys());
      const destroyed = damage(paths, target, kind, seed, fixture);
      const row: Row = {
        case: `${target} ${kind}`,
        detected: "",
        recovered: 0,
        expected: 0,
        destroyed: destroyed.size,
        spooled: 0,
      };

      if (target === "search.db") {
        const degraded = waitFor(store, "search.degraded", 20_000);
        const rebuilt = waitFor(store, "search.rebuilt", 60_000);
        const op = store.messageOp({
          session_id: fixture.sessions[1] ?? "",
          role: "user",
          content: "zebra after damage",
        });
        await store.write([op]);
        if (op.op === "message.append") acknowledged.add(op.uid);
        store.index.flush();
        // The failed flush reports the damage (degraded) and starts the rebuild from state.db at once.
        const event = await degraded;
        expect(event).toMatchObject({ detail: expect.stringMatching(/malformed|not a database|disk I\/O/) });
        const done = await rebuilt;
        row.detected = `search degraded, rebuilt (${done.type === "search.rebuilt" ? done.messages : 0} msgs)`;
        expect(store.health()).toMatchObject({ writable: true, corrupt: null, search: { status: "ok" } });
        expect((await store.search("zebra")).hits.map((h) => h.message.content)).toEqual([
          "zebra after damage",
        ]);
        await releaseStore(store);
      } else {
        const spooled: string[] = [];
        for (const [i, session] of [...fixture.sessions, "s_new_during_outage"].entries()) {
          const op = store.messageOp({ session_id: session, role: "user", content: `after the damage ${i}` });
          const error = await store.write([op]).catch((e: unknown) => e);
          expect(error, `write ${i} after the damage`).toBeInstanceOf(StoreCorruptError);
          expect((error as StoreCorruptError).spooledTo).not.toBeNull();
          if (i === 0) row.detected = `write fails fast: ${(error as StoreCorruptError).code}`;
          if (op.op === "message.append") spooled.push(op.uid);
        }
        expect(store.health()).toMatchObject({ writable: false, corrupt: { detail: expect.any(String) } });
        row.detected += ", health corrupt";
        row.spooled = spooled.length;
        for (const uid of spooled) acknowledged.add(uid);
        await releaseStore(store);
        // The guard a corrupt store keeps open (so nothing checkpoints the damage) is this test's own
        // process: close it, as the process ending would, before restoring.
        (store as unknown as { guard: Database.Database | null }).guard?.close();
        const output = join(tempDir(), "recovered.db");
        const report = await recoverStore({ source: paths.state, output });
        expect(report.output?.integrity.status).toBe("ok");
        expect(report.spool.messages_new).toBe(spooled.length);
        const restored = await restoreStore({ paths, from: output });
        expect(restored.spool.failed).toEqual([]);
      }

      const back = await storedUids(paths);
      const expected = [...acknowledged].filter((uid) => !destroyed.has(uid));
      const missing = expected.filter((uid) => !back.has(uid));
      const phantom = [...back].filter((uid) => !acknowledged.has(uid));
      row.expected = expected.length;
      row.recovered = expected.length - missing.length;
      table.push(row);
      expect(missing, "acknowledged messages the damage did not destroy").toEqual([]);
      expect(phantom, "messages nobody wrote").toEqual([]);
      expect(destroyed.size).toBeLessThan(acknowledged.size / 2);
    },
    120_000,
  );
});
