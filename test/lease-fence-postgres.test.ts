// Fencing of turn leases on a shared PostgreSQL store: two stores on two pools (two gateways'
// connections) over one database of this file's private cluster. The old owner of a turn stalls,
// the other takes the turn over, and every late write of the old owner is refused by its epoch:
// straight to the database, racing the takeover, and replayed from the spool.
import { describe, expect, it } from "vitest";
import { reapDeadTurns } from "../src/agent/reap.js";
import { restartTurn } from "../src/agent/turn-resume.js";
import { FIRST_EPOCH } from "../src/store/lease-fence.js";
import { Spool } from "../src/store/spool.js";
import { replaySpool } from "../src/store/spool-replay.js";
import type { StoreEvent } from "../src/store/store-types.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { openPostgresAt } from "./helpers/store-engines.js";
import { rejected } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

const cluster = usePostgresCluster();

async function twoOwners() {
  const url = await cluster().createDatabase();
  const old = (await openPostgresAt(url)).store;
  const next = (await openPostgresAt(url)).store;
  const sid = await old.createSession();
  return { old, next, sid };
}

describe("lease fencing on PostgreSQL, two stores on two pools", () => {
  it("a stale owner's write refused by its epoch", async () => {
    const { old, next, sid } = await twoOwners();
    const told: StoreEvent[] = [];
    old.on((e) => told.push(e));
    const now = await old.databaseNow();
    const begun = old.beginTurn({
      sessionId: sid,
      leaseMs: 1_000,
      owner: "inst:old",
      question: { role: "user", content: "question" },
      leaseNow: now,
    });
    await begun.durable;
    await old.appendMessage({
      session_id: sid,
      role: "assistant",
      content: "thinking",
      turn_id: begun.id,
      lease_epoch: begun.epoch,
    });
    // The old owner stalls past its lease: the other process reaps the turn (epoch 2) and takes it over (3).
    const later = (await next.databaseNow()) + 5_000;
    expect((await reapDeadTurns(next, later)).map((t) => t.turn_id)).toEqual([begun.id]);
    const point = await restartTurn(next, sid, begun.id, 60_000, later, "inst:next");
    expect(point.epoch).toBe(FIRST_EPOCH + 2);
    await next.appendMessage({
      session_id: sid,
      role: "assistant",
      content: "the new owner's answer",
      turn_id: begun.id,
      lease_epoch: point.epoch,
    });

    // The old owner wakes up: its heartbeat, its answer and its end are all refused.
    const heartbeat = await rejected(() =>
      old.updateTurn({
        id: begun.id,
        heartbeat_at: later,
        lease_expires_at: later + 1_000,
        lease_epoch: begun.epoch,
      }),
    );
    expect(heartbeat.code).toBe("lease_lost");
    expect(heartbeat.message).toMatch(new RegExp(`turn ${begun.id}.*epoch 1 but the turn is at epoch 3`));
    const end = await rejected(() =>
      old.write([
        old.messageOp({
          session_id: sid,
          role: "assistant",
          content: "the old owner's answer",
          turn_id: begun.id,
          lease_epoch: begun.epoch,
        }),
        {
          op: "turn.update",
          id: begun.id,
          status: "completed",
          lease_owner: null,
          lease_expires_at: null,
          lease_epoch: begun.epoch,
        },
      ]),
    );
    expect(end.code).toBe("lease_lost");
    expect((await next.getMessages(sid)).map((m) => m.content)).toEqual([
      "question",
      "thinking",
      expect.stringContaining("turn interrupted"),
      "the new owner's answer",
    ]);
    expect((await next.getTurns(sid))[0]).toMatchObject({
      status: "running",
      lease_owner: "inst:next",
      lease_epoch: 3,
    });
    expect(told.filter((e) => e.type === "lease_lost")).toHaveLength(2);
  });

  it("keeps a stale owner's appends racing a takeover on one side of it, 30 rounds", async () => {
    const { old, next, sid } = await twoOwners();
    for (let round = 0; round < 30; round++) {
      const turn = await old.startTurn(sid, 60_000, "inst:old");
      await old.write([{ op: "turn.update", id: turn, status: "interrupted", new_epoch: true }]);
      // The old owner holds epoch 2 (as if it had resumed the turn itself before stalling).
      const appends = Array.from({ length: 3 }, (_, i) =>
        old
          .appendMessage({
            session_id: sid,
            role: "tool",
            content: `r${round}.${i}`,
            turn_id: turn,
            lease_epoch: 2,
          })
          .then(() => "stored" as const)
          .catch((e: { code?: string }) => e.code),
      );
      const [taken, ...outcomes] = await Promise.all([
        restartTurn(next, sid, turn, 60_000, 1, "inst:next"),
        ...appends,
      ]);
      expect(taken.epoch).toBe(3);
      for (const outcome of outcomes) expect(["stored", "lease_lost"]).toContain(outcome);
      // After the takeover committed, nothing of the old owner's lands.
      const late = await rejected(() =>
        old.appendMessage({ session_id: sid, role: "tool", content: "late", turn_id: turn, lease_epoch: 2 }),
      );
      expect(late.code).toBe("lease_lost");
      await next.updateTurn({ id: turn, status: "completed", lease_epoch: 3 });
    }
    expect((await next.getMessages(sid)).some((m) => m.content === "late")).toBe(false);
  });

  it("refuses a spooled write of a turn taken over since, replaying the rest of its record", async () => {
    const { old, next, sid } = await twoOwners();
    const begun = old.beginTurn({ sessionId: sid, leaseMs: 60_000, owner: "inst:old" });
    await begun.durable;
    // What the old owner's store kept in its spool while the database could not be reached.
    const spoolDir = `${tempDir()}/spool`;
    const spool = new Spool(spoolDir, "default", next.where);
    spool.append(
      [
        { op: "record.put", kind: "note", key: "usage", session_id: sid, value: "1", updated_at: 5 },
        old.messageOp({
          session_id: sid,
          role: "assistant",
          content: "spooled answer",
          turn_id: begun.id,
          lease_epoch: begun.epoch,
        }),
        { op: "turn.update", id: begun.id, status: "completed", lease_epoch: begun.epoch },
      ],
      "unavailable",
      Date.now(),
    );
    spool.close();
    await next.write([{ op: "turn.update", id: begun.id, status: "interrupted", new_epoch: true }]);
    await restartTurn(next, sid, begun.id, 60_000, Date.now(), "inst:next");
    const report = await replaySpool(next, spoolDir, "default", () => Date.now());
    expect(report).toMatchObject({ records: 1, fenced: 2, ops: 1, messages: 0 });
    expect(await next.getRecord("note", "usage")).toBe(1);
    expect((await next.getMessages(sid)).some((m) => m.content === "spooled answer")).toBe(false);
    expect((await next.getTurns(sid))[0]).toMatchObject({
      status: "running",
      lease_owner: "inst:next",
      lease_epoch: 3,
    });
  });
});
