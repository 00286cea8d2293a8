// The spool's replay: only whole lines of this profile's records for this store, progress kept so
// nothing is replayed twice (and what is appended later is replayed next time), a turn left running
// settled as failed, one replay at a time. The store here is SQLite's (the replay goes through the
// port alone); test/store-postgres-outage.test.ts replays into PostgreSQL after a real outage.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { ownerOf } from "../core/process-owner.js";
import type { WriteOp } from "./ops.js";
import { openStore, releaseStore } from "./registry.js";
import type { SpoolRecord } from "./spool.js";
import { pendingSpool, replaySpool } from "./spool-replay.js";
import { messageAppendOp, sessionCreateOp } from "./store-domain.js";

const line = (ops: WriteOp[], store: string, profile = "default"): string =>
  `${JSON.stringify({ v: 1, spooled_at: 1, profile, store, reason: "unavailable", ops } satisfies SpoolRecord)}\n`;

async function setup() {
  const paths = tempProfile();
  const deps = fakeDeps();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps });
  mkdirSync(paths.spool, { recursive: true });
  const file = join(paths.spool, "20261205T100000-1-abcdef.jsonl");
  return { paths, deps, store, file, where: store.where };
}

describe("replaying the spool", () => {
  it("replays this store's whole records once, leaves others and a torn line, and picks up later appends", async () => {
    const { paths, deps, store, file, where } = await setup();
    const now = deps.clock.now();
    const session = sessionCreateOp({ title: "refused" }, now);
    const question = messageAppendOp({ session_id: session.id, role: "user", content: "kept?" }, now);
    writeFileSync(
      file,
      line([session.op, question], where) +
        line([sessionCreateOp({}, now).op], "postgres://elsewhere/db") +
        line([sessionCreateOp({}, now).op], where, "other") +
        "not json\n" +
        '{"v":1,"spooled_at":1,"profile":"default"', // a line still being written
    );
    expect(pendingSpool(paths.spool, "default", where)).toMatchObject({ foreign: 2, unreadable: [{ file }] });

    const first = await replaySpool(store, paths.spool, "default", () => now);
    expect(first).toMatchObject({ records: 1, ops: 2, messages: 1, duplicates: 0, foreign: 2, settled: [] });
    expect((await store.getMessages(session.id)).map((m) => m.content)).toEqual(["kept?"]);

    // Nothing twice; the torn line, once finished, is replayed next time (as one of ours).
    const again = await replaySpool(store, paths.spool, "default", () => now);
    expect(again).toMatchObject({ records: 0, ops: 0 });
    const answer = messageAppendOp({ session_id: session.id, role: "assistant", content: "yes" }, now);
    appendFileSync(file, `,"store":"x","reason":"r","ops":[]}\n${line([answer], where)}`);
    const later = await replaySpool(store, paths.spool, "default", () => now);
    expect(later).toMatchObject({ records: 1, messages: 1, foreign: 1 });
    expect((await store.getMessages(session.id)).map((m) => m.content)).toEqual(["kept?", "yes"]);
    await releaseStore(store);
  });

  it("settles a replayed turn nobody runs as failed, skips messages already stored, and leaves ended turns as they are", async () => {
    const { paths, deps, store, file, where } = await setup();
    const sessionId = await store.createSession({});
    const now = deps.clock.now();
    const first = messageAppendOp(
      { session_id: sessionId, role: "user", content: "first", uid: "m_first" },
      now,
    );
    await store.write([first]);
    const turnStart: WriteOp = {
      op: "turn.start",
      id: "t_refused",
      session_id: sessionId,
      started_at: now,
      lease_owner: "pid:1",
      lease_expires_at: now + 1_000,
    };
    // A turn that ended while its answer was refused (resumed and answered again, or failed): the
    // refused answer would be its second.
    const done = await store.startTurn(sessionId, 60_000, "pid:1");
    await store.write([
      messageAppendOp({ session_id: sessionId, role: "assistant", content: "answered", turn_id: done }, now),
      { op: "turn.update", id: done, status: "completed", ended_at: now },
    ]);
    const late = messageAppendOp(
      { session_id: sessionId, role: "assistant", content: "late", turn_id: done },
      now,
    );
    writeFileSync(
      file,
      line([turnStart, first], where) +
        line([late, { op: "turn.update", id: done, status: "failed" }], where),
    );
    // Replayed while its lease still runs: it was never run (its start was refused), so it is settled anyway.
    const report = await replaySpool(store, paths.spool, "default", () => now + 500);
    expect(report).toMatchObject({
      records: 2,
      duplicates: 1,
      messages: 0,
      superseded: 2,
      settled: ["t_refused"],
    });
    expect((await store.getTurns(sessionId)).find((t) => t.id === done)?.status).toBe("completed");
    expect((await store.getMessages(sessionId)).map((m) => m.content)).not.toContain("late");
    expect((await store.getTurns(sessionId)).find((t) => t.id === "t_refused")).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/refused this turn's writes/),
    });
    await releaseStore(store);
  });

  it("leaves a running turn whose lease still runs to its owner, and replays nothing from no spool", async () => {
    const { paths, deps, store, file, where } = await setup();
    const sessionId = await store.createSession({});
    const now = deps.clock.now();
    const live = await store.startTurn(sessionId, 60_000, "pid:1");
    const refused = messageAppendOp(
      { session_id: sessionId, role: "tool", content: "out", turn_id: live },
      now,
    );
    writeFileSync(file, line([refused], where));
    expect(await replaySpool(store, paths.spool, "default", () => now + 1_000)).toMatchObject({
      messages: 1,
      settled: [],
    });
    expect((await store.getTurns(sessionId))[0]?.status).toBe("running");
    // Its lease ran out with nobody renewing it: the next replay that writes to it settles it.
    appendFileSync(file, line([{ ...refused, uid: "m_second" } as WriteOp], where));
    expect(await replaySpool(store, paths.spool, "default", () => now + 120_000)).toMatchObject({
      settled: [live],
    });
    const fresh = tempProfile();
    expect(await replaySpool(store, fresh.spool, "default", () => now)).toMatchObject({ records: 0 });
    await releaseStore(store);
  });

  it("refuses while another live replay holds the folder, and takes over a dead one's lock", async () => {
    const { paths, store, file, where } = await setup();
    writeFileSync(file, line([sessionCreateOp({}, 1).op], where));
    writeFileSync(join(paths.spool, "replay.lock"), ownerOf());
    await expect(replaySpool(store, paths.spool, "default", () => 1)).rejects.toMatchObject({
      code: "store_replay_running",
    });
    writeFileSync(join(paths.spool, "replay.lock"), "pid:999999999@1");
    expect(await replaySpool(store, paths.spool, "default", () => 1)).toMatchObject({ records: 1 });
    await releaseStore(store);
  });
});
