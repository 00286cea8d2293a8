// The outbox through a chat platform's channel: the formatting fallback, edits of a message still
// being sent, enqueueing in the caller's transaction, a success whose mark could not be written,
// and its upkeep on the scheduler, on a real store file and an in-memory platform.
import { describe, expect, it } from "vitest";
import { FakePlatform } from "../../test/helpers/fake-platform.js";
import { chat, send, setup, state, T0 } from "../../test/helpers/platform-outbox.js";
import { Scheduler } from "../agent/scheduler.js";
import { formattingRejected, retryable } from "../platforms/adapter.js";
import { listChatEntries as listOutboxEntries, outboxEntryOp } from "../platforms/outbox-records.js";
import { putOp } from "../store/record-ops.js";
import type { Store } from "../store/store.js";
import { OUTBOX_KIND } from "./entry.js";

describe("Outbox: formatting, edits, transactions, upkeep", () => {
  it("resends as plain text when the platform rejects the formatting, and keeps it plain", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [formattingRejected("can't parse entities"), retryable("502")]);
    const outbox = t.outbox(t.store, platform);
    const { key } = await outbox.enqueueChat({ message: send("1", "*bold", { format: "markdown" }) });
    await outbox.kick();
    expect(platform.performed.map((op) => (op.type === "send" ? op.format : op.type))).toEqual([
      "markdown",
      "plain",
    ]);
    expect((await state(t.store, key))?.payload).toMatchObject({ format: "plain" });
    t.clock.now += 1_000;
    await outbox.deliverDue();
    expect(platform.performed.at(-1)).toMatchObject({ type: "send", format: "plain" });
    expect((await state(t.store, key))?.state).toBe("delivered");
  });

  it("an edit by the outbox key of its send waits for the send, then uses its message id", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [retryable("502"), { ok: true, message_id: "555" }]);
    const outbox = t.outbox(t.store, platform);
    const sent = await outbox.enqueueChat({ message: send("1", "thinking…") });
    const edit = await outbox.enqueueChat({
      message: { type: "edit", chat: chat("1"), of_key: sent.key, text: "the answer", format: "plain" },
    });
    await outbox.kick();
    t.clock.now += 1_000;
    await outbox.deliverDue();
    expect(platform.performed.at(-1)).toEqual({
      type: "edit",
      chat: chat("1"),
      message_id: "555",
      text: "the answer",
      format: "plain",
      // Each op carries its entry's key, for a platform that can drop a resend.
      idempotency_key: edit.key,
    });
    expect(platform.performed).toHaveLength(3);
  });

  it("enqueues in the caller's transaction: the entry exists exactly when what made it does", async () => {
    const t = await setup();
    const { entry, op } = outboxEntryOp({ message: send("1", "done"), origin: "turn:t_1" }, T0);
    await expect(t.store.write([op, { op: "message.append", ...badMessage() }])).rejects.toThrow(
      /does not exist/,
    );
    expect(await listOutboxEntries(t.store)).toEqual([]);
    await t.store.write([op]);
    expect(await listOutboxEntries(t.store)).toEqual([entry]);
    expect(entry).toMatchObject({
      channel: "fake",
      lane: "fake:1",
      origin: "turn:t_1",
      state: "pending",
    });
  });

  it("a success whose mark the store refused is marked by the next pass, never sent again", async () => {
    const t = await setup();
    const platform = new FakePlatform();
    let refuse = true;
    // The real store, but its writes of a delivered mark fail once (a full disk, a lock).
    const store = new Proxy(t.store, {
      get(target, prop, receiver) {
        if (prop !== "write") return Reflect.get(target, prop, receiver);
        return (ops: Parameters<Store["write"]>[0]) => {
          const marks = ops.some((op) => op.op === "record.put" && op.value?.includes('"state":"delivered"'));
          if (refuse && marks) {
            refuse = false;
            return Promise.reject(new Error("SQLITE_FULL: database or disk is full"));
          }
          return target.write(ops);
        };
      },
    });
    const outbox = t.outbox(store, platform);
    const { entry, op } = outboxEntryOp({ message: send("1", "once") }, T0);
    const key = entry.key;
    await t.store.write([op]);
    expect(await outbox.deliverDue()).toEqual({ delivered: 1, failed: 0, given_up: 0 });
    expect(platform.texts()).toEqual(["once"]);
    expect((await state(t.store, key))?.state).toBe("pending");
    expect((await outbox.backlog()).fake?.pending).toBe(0);
    expect(t.events.map((e) => e.type)).toEqual(["platform_delivery_failed", "platform_delivered"]);
    expect(t.events[0]?.message).toContain("delivered but not yet marked (SQLITE_FULL");
    // Past the lease: the entry would be due, but this process knows it was delivered.
    t.clock.now += 3_600_000;
    await outbox.deliverDue();
    expect(platform.texts()).toEqual(["once"]);
    expect(await state(t.store, key)).toMatchObject({ state: "delivered", receipt: "100" });
  });

  it("an idle outbox still sends at once what another process writes", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [retryable("502")]);
    const outbox = t.outbox(t.store, platform, { backoff: () => 60_000 });
    await outbox.enqueueChat({ message: send("1", "waits") });
    await outbox.kick();
    // Nothing due: this pass and the next find the outbox idle.
    t.clock.now += 1_000;
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 0 });
    await t.store.write([outboxEntryOp({ message: send("2", "written elsewhere") }, t.clock.now).op]);
    expect((await outbox.deliverDue()).delivered).toBe(1);
    t.clock.now += 59_000;
    expect((await outbox.deliverDue()).delivered).toBe(1);
    expect(platform.texts()).toEqual(["waits", "written elsewhere", "waits"]);
  });

  it("maintainOn sends on the scheduler until stopped, and prune drops old delivered entries", async () => {
    const t = await setup();
    const platform = new FakePlatform();
    const outbox = t.outbox(t.store, platform, { now: () => Date.now() });
    const scheduler = new Scheduler();
    outbox.maintainOn(scheduler, 20);
    expect(scheduler.size).toBe(2);
    await t.store.write([outboxEntryOp({ message: send("1", "tick") }, Date.now()).op]);
    for (let i = 0; i < 100 && platform.performed.length === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(platform.texts()).toEqual(["tick"]);
    outbox.stop();
    expect(scheduler.size).toBe(0);
    scheduler.stop();
    expect(await outbox.prune(60_000)).toBe(0);
    expect(await outbox.prune(-60_000)).toBe(1);
    expect(await listOutboxEntries(t.store)).toEqual([]);
  });

  it("wake: once the platform answers again, what waits out a backoff step goes at once; a held lease is left alone", async () => {
    const t = await setup();
    // Six failures: the next try would be 60 s away (the steps are 1, 2, 5, 10, 30, 60 s).
    const platform = new FakePlatform(
      "fake",
      Array.from({ length: 6 }, () => retryable("502")),
    );
    const outbox = t.outbox(t.store, platform);
    const { key } = await outbox.enqueueChat({ message: send("1", "after the outage") });
    await outbox.kick();
    for (let i = 0; i < 5; i++) {
      t.clock.now = (await state(t.store, key))?.next_at ?? t.clock.now;
      await outbox.kick();
    }
    expect(await state(t.store, key)).toMatchObject({ attempts: 6, state: "pending", leased: false });
    expect(((await state(t.store, key))?.next_at ?? 0) - t.clock.now).toBeGreaterThanOrEqual(48_000);
    // Another entry is held by an attempt of another process: its lease is not cut short.
    const { entry: heldEntry } = outboxEntryOp(
      { message: send("2", "being sent elsewhere"), id: "held" },
      t.clock.now,
    );
    const held = { key: heldEntry.key };
    await t.store.write([
      putOp(
        OUTBOX_KIND,
        held.key,
        { ...heldEntry, leased: true, next_at: t.clock.now + 40_000 },
        t.clock.now,
      ),
    ]);
    // And one waits out a 429's retry_after: Telegram's word is kept to the letter.
    const { entry: limited } = outboxEntryOp(
      { message: send("3", "rate limited"), id: "limited" },
      t.clock.now,
    );
    await t.store.write([
      putOp(
        OUTBOX_KIND,
        limited.key,
        { ...limited, attempts: 1, asked_wait: true, next_at: t.clock.now + 30_000 },
        t.clock.now,
      ),
    ]);
    const before = platform.performed.length;
    expect(await outbox.wake("fake")).toBe(1);
    expect(await state(t.store, limited.key)).toMatchObject({
      state: "pending",
      next_at: t.clock.now + 30_000,
    });
    expect(platform.performed.length).toBe(before + 1);
    expect(await state(t.store, key)).toMatchObject({ state: "delivered", attempts: 7 });
    expect(await state(t.store, held.key)).toMatchObject({
      state: "pending",
      leased: true,
      next_at: t.clock.now + 40_000,
    });
  });

  it("leaves entries of a platform this process has no adapter for", async () => {
    const t = await setup();
    const platform = new FakePlatform("other");
    await t.store.write([outboxEntryOp({ message: send("1", "for fake") }, T0).op]);
    expect(await t.outbox(t.store, platform).deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 0 });
    expect(platform.performed).toEqual([]);
    expect(await t.outbox(t.store, platform).backlog()).toEqual({
      other: {
        pending: 0,
        given_up: 0,
        oldest_pending_at: null,
        oldest_pending_age_ms: null,
        last_error: null,
      },
      fake: { pending: 1, given_up: 0, oldest_pending_at: T0, oldest_pending_age_ms: 0, last_error: null },
    });
  });
});

function badMessage() {
  return {
    uid: "m_1",
    session_id: "ses_missing",
    role: "assistant",
    content: "x",
    content_kind: "text" as const,
    tool_calls: null,
    tool_call_id: null,
    name: null,
    turn_id: null,
    created_at: T0,
  };
}
