// The outbox through a chat platform's channel, on a real store file and an in-memory platform:
// exactly once across a restart, never twice at once from two outboxes, one lane's messages in
// order under retries, retry_after honoured to the millisecond, the give-up bounds, the backlog.
import { describe, expect, it } from "vitest";
import { deadOwnerTag } from "../../test/helpers/dead-owner.js";
import { type Answer, FakePlatform } from "../../test/helpers/fake-platform.js";
import { send, setup, state, T0 } from "../../test/helpers/platform-outbox.js";
import { ownerOf } from "../core/process-owner.js";
import { permanent, retryable } from "../platforms/adapter.js";
import { listChatEntries as listOutboxEntries, outboxEntryOp } from "../platforms/outbox-records.js";
import { putOp } from "../store/record-ops.js";
import { releaseStore } from "../store/registry.js";
import { OUTBOX_KIND } from "./entry.js";

describe("Outbox: exactly once", () => {
  it("marks a success with the message id, and a new outbox on the reopened store never resends", async () => {
    const t = await setup();
    const platform = new FakePlatform();
    const outbox = t.outbox(t.store, platform);
    const { key } = await outbox.enqueueChat({ message: send("1", "hello"), id: "turn_1/reply/0" });
    await outbox.kick();
    expect(platform.texts()).toEqual(["hello"]);
    expect(await state(t.store, key)).toMatchObject({
      state: "delivered",
      attempts: 1,
      receipt: "100",
      delivered_at: T0,
    });
    expect(t.events.map((e) => [e.type, e.platform, e.chat, e.key])).toEqual([
      ["platform_delivered", "fake", "fake:1", key],
    ]);
    // The same enqueue again (a retried write by whoever made it) is recognised and not sent.
    expect(await outbox.enqueueChat({ message: send("1", "hello"), id: "turn_1/reply/0" })).toEqual({
      key,
      created: false,
    });
    outbox.stop();
    await releaseStore(t.store);

    const again = await setup(t.paths);
    again.clock.now = T0 + 3_600_000;
    const restarted = new FakePlatform();
    expect(await again.outbox(again.store, restarted).deliverDue()).toEqual({
      delivered: 0,
      failed: 0,
      given_up: 0,
    });
    expect(restarted.performed).toEqual([]);
    await releaseStore(again.store);
  });

  it("after a crash between send and mark, sends once more only when the dead attempt's lease ends", async () => {
    const t = await setup();
    const { entry, op } = outboxEntryOp({ message: send("1", "answer") }, T0);
    // What a process that died after the platform took the message leaves: the lease, no mark.
    const leaseEnd = T0 + 10_000 + 30_000;
    await t.store.write([op]);
    await t.store.write([putOp(OUTBOX_KIND, entry.key, { ...entry, next_at: leaseEnd }, T0 + 1)]);
    await releaseStore(t.store);

    const again = await setup(t.paths);
    const platform = new FakePlatform();
    const outbox = again.outbox(again.store, platform);
    again.clock.now = leaseEnd - 1;
    expect((await outbox.deliverDue()).delivered).toBe(0);
    again.clock.now = leaseEnd;
    expect((await outbox.deliverDue()).delivered).toBe(1);
    again.clock.now += 3_600_000;
    await outbox.deliverDue();
    // The documented bound: the one message that reached the platform unmarked is sent once more.
    expect(platform.texts()).toEqual(["answer"]);
    await releaseStore(again.store);
  });

  it("a lease whose process has ended is over at once; one a live process holds runs its course", async () => {
    const dead = await deadOwnerTag();
    const t = await setup();
    const leaseEnd = T0 + 10_000 + 30_000;
    const killed = outboxEntryOp({ message: send("1", "from the killed gateway") }, T0);
    const live = outboxEntryOp({ message: send("2", "from a live one") }, T0);
    await t.store.write([killed.op, live.op]);
    await t.store.write([
      putOp(
        OUTBOX_KIND,
        killed.entry.key,
        { ...killed.entry, next_at: leaseEnd, leased: true, leased_by: dead },
        T0 + 1,
      ),
      putOp(
        OUTBOX_KIND,
        live.entry.key,
        { ...live.entry, next_at: leaseEnd, leased: true, leased_by: ownerOf() },
        T0 + 1,
      ),
    ]);
    const platform = new FakePlatform();
    const outbox = t.outbox(t.store, platform);
    expect((await outbox.deliverDue()).delivered).toBe(1);
    expect(platform.texts()).toEqual(["from the killed gateway"]);
    expect(await state(t.store, killed.entry.key)).toMatchObject({ state: "delivered" });
    expect(await state(t.store, killed.entry.key)).not.toHaveProperty("leased_by");
    t.clock.now = leaseEnd;
    expect((await outbox.deliverDue()).delivered).toBe(1);
    expect(platform.texts()).toEqual(["from the killed gateway", "from a live one"]);
    await releaseStore(t.store);
  });

  it("two outboxes on one store send an entry once, however their passes overlap", async () => {
    const t = await setup();
    const slow: Answer = () =>
      new Promise((resolve) => setTimeout(() => resolve({ ok: true, message_id: "7" }), 100));
    const a = new FakePlatform("fake", [slow, slow]);
    const b = new FakePlatform("fake", [slow, slow]);
    await t.store.write([
      outboxEntryOp({ message: send("1", "one") }, T0).op,
      outboxEntryOp({ message: send("2", "two") }, T0).op,
    ]);
    const one = t.outbox(t.store, a);
    const other = t.outbox(t.store, b);
    const reports = await Promise.all([one.deliverDue(), other.deliverDue(), one.deliverDue()]);
    expect(reports.reduce((n, r) => n + r.delivered, 0)).toBe(2);
    expect([...a.texts(), ...b.texts()].sort()).toEqual(["one", "two"]);
    // Later passes find both delivered.
    t.clock.now += 3_600_000;
    await Promise.all([one.deliverDue(), other.deliverDue()]);
    expect(a.performed.length + b.performed.length).toBe(2);
  });
});

describe("Outbox: two processes", () => {
  it("never resends what the other delivered while this pass was busy with other chats", async () => {
    const t = await setup();
    // What the platform saw, across both processes: each send's start and end.
    const log: string[] = [];
    const slow = (): Answer => (op) => {
      const text = op.type === "send" ? op.text : op.type;
      log.push(`start ${text}`);
      return new Promise((resolve) =>
        setTimeout(() => {
          log.push(`end ${text}`);
          resolve({ ok: true, message_id: "1" });
        }, 30),
      );
    };
    const a = new FakePlatform("fake", Array.from({ length: 24 }, slow));
    const b = new FakePlatform("fake", Array.from({ length: 24 }, slow));
    const chats = Array.from({ length: 12 }, (_, i) => String(i));
    await t.store.write(
      chats.flatMap((c) => [
        outboxEntryOp({ message: send(c, `${c}/1`) }, T0).op,
        outboxEntryOp({ message: send(c, `${c}/2`) }, T0).op,
      ]),
    );
    // Two chats at a time each: the last chats are reached only after the first are done.
    const one = t.outbox(t.store, a, { parallel: 2 });
    const other = t.outbox(t.store, b, { parallel: 2 });
    for (let pass = 0; pass < 3; pass++) await Promise.all([one.deliverDue(), other.deliverDue()]);
    const sent = [...a.texts(), ...b.texts()];
    expect(sent).toHaveLength(24);
    expect(new Set(sent).size).toBe(24);
    // Each chat's second message started only after its first was answered, whoever sent them.
    for (const c of chats) expect(log.indexOf(`end ${c}/1`)).toBeLessThan(log.indexOf(`start ${c}/2`));
    expect((await listOutboxEntries(t.store)).every((e) => e.state === "delivered")).toBe(true);
  });
});

describe("Outbox: order and retries", () => {
  it("never sends a message before an earlier one to the same chat that waits for a retry", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [retryable("fake answered 502 Bad Gateway")]);
    const outbox = t.outbox(t.store, platform);
    const ops = [
      outboxEntryOp({ message: send("1", "a") }, T0),
      outboxEntryOp({ message: send("1", "b") }, T0),
      outboxEntryOp({ message: send("1", "c") }, T0),
    ];
    await t.store.write([
      ...ops.map((o) => o.op).reverse(),
      outboxEntryOp({ message: send("2", "x") }, T0).op,
    ]);
    expect(await outbox.deliverDue()).toEqual({ delivered: 1, failed: 1, given_up: 0 });
    expect(platform.texts()).toEqual(["a", "x"]);
    expect(await state(t.store, ops[0]?.entry.key ?? "")).toMatchObject({
      state: "pending",
      attempts: 1,
      next_at: T0 + 1_000,
      last_error: "fake answered 502 Bad Gateway",
    });
    t.clock.now += 999;
    await outbox.deliverDue();
    expect(platform.texts()).toEqual(["a", "x"]);
    t.clock.now += 1;
    expect((await outbox.deliverDue()).delivered).toBe(3);
    expect(platform.texts()).toEqual(["a", "x", "a", "b", "c"]);
  });

  it("502, 502, then 429 retry_after 2 s, then ok: waits exactly that, and delivers once", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [
      retryable("502"),
      retryable("502"),
      retryable("429 Too Many Requests: retry after 2", 2_000),
    ]);
    const outbox = t.outbox(t.store, platform);
    const { key } = await outbox.enqueueChat({ message: send("1", "reply") });
    await outbox.kick();
    expect((await state(t.store, key))?.next_at).toBe(T0 + 1_000);
    t.clock.now += 1_000;
    await outbox.deliverDue();
    expect((await state(t.store, key))?.next_at).toBe(t.clock.now + 2_000);
    t.clock.now += 2_000;
    await outbox.deliverDue();
    expect(await state(t.store, key)).toMatchObject({ attempts: 3, next_at: t.clock.now + 2_000 });
    t.clock.now += 1_999;
    expect((await outbox.deliverDue()).delivered).toBe(0);
    t.clock.now += 1;
    expect((await outbox.deliverDue()).delivered).toBe(1);
    t.clock.now += 3_600_000;
    await outbox.deliverDue();
    expect(platform.texts()).toEqual(["reply", "reply", "reply", "reply"]);
    expect(await state(t.store, key)).toMatchObject({ state: "delivered", attempts: 4 });
    expect(outbox.stats()).toEqual({
      delivered_total: { fake: 1 },
      failed_total: { fake: 3 },
      given_up_total: {},
    });
  });

  it("gives up past the attempts allowed, with an event, and the chat's next message goes", async () => {
    const t = await setup();
    const down = retryable("fake: connect ECONNREFUSED");
    const platform = new FakePlatform("fake", [down, down, down]);
    const outbox = t.outbox(t.store, platform, { maxAttempts: 3, backoff: () => 10 });
    const first = await outbox.enqueueChat({ message: send("1", "lost") });
    await outbox.enqueueChat({ message: send("1", "after") });
    await outbox.kick();
    t.clock.now += 10;
    await outbox.deliverDue();
    expect(await outbox.backlog()).toEqual({
      fake: {
        pending: 2,
        given_up: 0,
        oldest_pending_at: T0,
        oldest_pending_age_ms: 10,
        last_error: "fake: connect ECONNREFUSED",
      },
    });
    t.clock.now += 10;
    expect(await outbox.deliverDue()).toEqual({ delivered: 1, failed: 0, given_up: 1 });
    expect(await state(t.store, first.key)).toMatchObject({ state: "given_up", attempts: 3 });
    expect(platform.texts()).toEqual(["lost", "lost", "lost", "after"]);
    const given = t.events.filter((e) => e.type === "platform_delivery_given_up");
    expect(given.map((e) => e.message)).toEqual([
      `${first.key} was given up: fake: connect ECONNREFUSED; 3 attempts, the last one allowed`,
    ]);
    expect(outbox.stats().given_up_total).toEqual({ fake: 1 });
    expect((await outbox.backlog()).fake).toMatchObject({ pending: 0, given_up: 1 });
  });

  it("gives up past the age allowed, and at once on a failure retrying will not fix", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [
      retryable("502"),
      retryable("502"),
      retryable("502"),
      permanent("403 Forbidden: bot was blocked by the user"),
    ]);
    const outbox = t.outbox(t.store, platform, { maxAgeMs: 60_000, backoff: () => 10_000 });
    const old = await outbox.enqueueChat({ message: send("1", "old") });
    await outbox.kick();
    t.clock.now += 40_000;
    await outbox.deliverDue();
    expect(await state(t.store, old.key)).toMatchObject({ state: "pending", attempts: 2 });
    t.clock.now += 20_000;
    await outbox.deliverDue();
    expect(await state(t.store, old.key)).toMatchObject({ state: "given_up", attempts: 3 });
    const blocked = await outbox.enqueueChat({ message: send("2", "blocked") });
    await outbox.kick();
    expect(await state(t.store, blocked.key)).toMatchObject({ state: "given_up", attempts: 1 });
    expect(t.events.filter((e) => e.type === "platform_delivery_given_up").map((e) => e.message)).toEqual([
      `${old.key} was given up: 502; still failing 1 min after it was queued`,
      `${blocked.key} was given up: 403 Forbidden: bot was blocked by the user; retrying will not fix it`,
    ]);
  });
});
