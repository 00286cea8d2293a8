// The inbox on a real store file: an update is committed once however often it is delivered (also
// after the store is reopened, and by two inboxes at once), pending ones read back in arrival
// order, done ones leave the list in the transaction of what they became, and the polling offset
// moves only with the updates it follows.
import { describe, expect, it } from "vitest";
import { FakePlatform } from "../../test/helpers/fake-platform.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { Scheduler } from "../agent/scheduler.js";
import { putOp } from "../store/record-ops.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { InboundEvent } from "./adapter.js";
import { doneOp, INBOX_KIND, inboxKey, OFFSET_KIND, PlatformInbox } from "./inbox.js";

const T0 = Date.parse("2026-12-03T06:00:00Z");

function message(update: number, chatId: string, text: string, userId = "42"): InboundEvent {
  return {
    type: "message",
    update_id: String(update),
    chat: { platform: "fake", chat_id: chatId, thread_id: null },
    chat_type: chatId.startsWith("-") ? "group" : "private",
    user: { id: userId, name: "Ada" },
    at: T0,
    message_id: `m${update}`,
    text,
  };
}

async function setup(paths = tempProfile()) {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const clock = { now: T0 };
  const inbox = new PlatformInbox({ store, now: () => clock.now });
  return { paths, store, clock, inbox };
}

describe("PlatformInbox", () => {
  it("commits an update once: a redelivery, also after the store is reopened, is not new", async () => {
    const t = await setup();
    const platform = new FakePlatform();
    const accepted: boolean[] = [];
    // The sink a real adapter awaits before it acknowledges the update.
    await platform.start(async (event) => {
      accepted.push((await t.inbox.accept(event)).created);
    });
    await platform.receive(message(1, "42", "hello"));
    await platform.receive(message(1, "42", "hello"));
    expect(accepted).toEqual([true, false]);
    const entry = await t.inbox.get("fake", "1");
    expect(entry).toMatchObject({
      key: "fake:1",
      chat_key: "fake:42",
      session_key: "fake:42",
      state: "pending",
      accepted_at: T0,
    });
    await releaseStore(t.store);

    const again = await setup(t.paths);
    again.clock.now = T0 + 60_000;
    expect((await again.inbox.pending()).map((e) => e.update_id)).toEqual(["1"]);
    const redelivered = await again.inbox.accept(message(1, "42", "hello"));
    expect(redelivered.created).toBe(false);
    expect(redelivered.entry.accepted_at).toBe(T0);
    await again.inbox.markDone(redelivered.entry, { session_id: "ses_1", turn_id: "turn_1" });
    expect(await again.inbox.accept(message(1, "42", "hello"))).toMatchObject({
      created: false,
      entry: { state: "done", session_id: "ses_1", turn_id: "turn_1", done_at: T0 + 60_000 },
    });
    expect(await again.inbox.pending()).toEqual([]);
    await releaseStore(again.store);
  });

  it("two inboxes on one store taking the same update at once commit it once", async () => {
    const t = await setup();
    const other = new PlatformInbox({ store: t.store, now: () => T0 });
    const both = await Promise.all([
      t.inbox.accept(message(5, "42", "x")),
      other.accept(message(5, "42", "x")),
    ]);
    expect(both.map((b) => b.created).sort()).toEqual([false, true]);
    expect(await t.store.listRecords(INBOX_KIND)).toHaveLength(1);
  });

  it("lists pending updates in arrival order per chat, with a session key per group user", async () => {
    const t = await setup();
    await t.inbox.accept(message(10, "-100", "first from 42", "42"));
    await t.inbox.accept(message(11, "7", "private"));
    t.clock.now += 1;
    await t.inbox.acceptAll([
      message(12, "-100", "from 43", "43"),
      message(13, "-100", "second from 42", "42"),
    ]);
    const pending = await t.inbox.pending();
    expect(pending.map((e) => e.update_id)).toEqual(["10", "11", "12", "13"]);
    expect(pending.map((e) => e.session_key)).toEqual([
      "fake:-100:u=42",
      "fake:7",
      "fake:-100:u=43",
      "fake:-100:u=42",
    ]);
    // Done in the transaction of what it became; the rest stay, in order.
    const first = pending[0];
    if (first === undefined) throw new Error("no pending update");
    await t.store.write([
      putOp("test_turn", "turn_1", { from: first.key }, t.clock.now),
      doneOp(first, { session_id: "ses_1", turn_id: "turn_1" }, t.clock.now),
    ]);
    expect((await t.inbox.pending()).map((e) => e.update_id)).toEqual(["11", "12", "13"]);
    expect(await t.inbox.pending("other")).toEqual([]);
  });

  it("writes the polling offset with the batch it follows, and skips what is already stored", async () => {
    const t = await setup();
    expect(await t.inbox.offset("fake")).toBeNull();
    const first = await t.inbox.acceptAll([message(20, "42", "a"), message(21, "42", "b")], {
      platform: "fake",
      offset: 22,
    });
    expect(first.map((a) => a.created)).toEqual([true, true]);
    expect(await t.inbox.offset("fake")).toBe(22);
    // A batch the platform sent again, one update new: only that one is new; the offset moves.
    const second = await t.inbox.acceptAll(
      [message(21, "42", "b"), message(22, "42", "c"), message(22, "42", "c")],
      { platform: "fake", offset: 23 },
    );
    expect(second.map((a) => a.created)).toEqual([false, true, false]);
    expect(await t.inbox.offset("fake")).toBe(23);
    expect((await t.store.listRecords(OFFSET_KIND)).map((r) => r.key)).toEqual(["fake"]);
  });

  it("prunes done updates past the retention, never pending ones", async () => {
    const t = await setup();
    const a = await t.inbox.accept(message(30, "42", "a"));
    await t.inbox.accept(message(31, "42", "b"));
    await t.inbox.markDone(a.entry, { session_id: null, turn_id: null, note: "/status answered" });
    t.clock.now += 10_000;
    expect(await t.inbox.prune(60_000)).toBe(0);
    expect(await t.inbox.prune(5_000)).toBe(1);
    expect((await t.store.listRecords(INBOX_KIND)).map((r) => r.key)).toEqual([inboxKey("fake", "31")]);
    const scheduler = new Scheduler();
    t.inbox.maintainOn(scheduler);
    expect(scheduler.size).toBe(1);
    t.inbox.stop();
    expect(scheduler.size).toBe(0);
    scheduler.stop();
  });
});
