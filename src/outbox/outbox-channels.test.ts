// One outbox, several channels: cron's results and a chat platform's messages go out in the same
// pass, each channel's policy and backlog its own; entries an earlier Tenax kept under a kind of
// their own (cron_outbox, platform_outbox) are moved in once and sent once, never twice, even by
// two processes adopting at the same time.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FakePlatform } from "../../test/helpers/fake-platform.js";
import { send, setup, T0 } from "../../test/helpers/platform-outbox.js";
import { cronChannel, listOutbox } from "../cron/delivery.js";
import { OUTBOX_KIND as CRON_LEGACY_KIND } from "../cron/records.js";
import { platformChannel } from "../platforms/outbox-channel.js";
import {
  chatEntryInput,
  listChatEntries,
  LEGACY_KIND as PLATFORM_LEGACY_KIND,
} from "../platforms/outbox-records.js";
import { putOp } from "../store/record-ops.js";
import type { Store } from "../store/store.js";
import { listEntries } from "./entry.js";
import { Outbox } from "./outbox.js";

const HOUR = 3_600_000;

async function both(store: Store, platform: FakePlatform, outputDir: string, now: () => number) {
  return new Outbox({ store, now })
    .add(cronChannel({ outputDir, random: () => 0.5 }))
    .add(platformChannel(platform, { random: () => 0.5 }));
}

/** A cron delivery as an earlier Tenax wrote it (kind cron_outbox). */
const legacyCron = (runKey: string, state: "pending" | "delivered") => ({
  key: `${runKey}/failing`,
  run_key: runKey,
  job: "nightly",
  what: "failing",
  target: "local",
  body: JSON.stringify({ type: "cron.notice", text: "nightly started failing" }),
  state,
  attempts: state === "delivered" ? 1 : 2,
  next_at: T0,
  last_error: state === "delivered" ? null : "disk full",
  created_at: T0 - HOUR,
  delivered_at: state === "delivered" ? T0 - HOUR : null,
});

/** A chat message as an earlier Tenax wrote it (kind platform_outbox). */
const legacyChat = (id: string, text: string, order: string) => ({
  key: `fake:1/${id}`,
  platform: "fake",
  chat_key: "fake:1",
  op: { type: "send", chat: { platform: "fake", chat_id: "1", thread_id: null }, text, format: "plain" },
  order,
  origin: "turn:t_1",
  state: "pending",
  attempts: 1,
  next_at: T0,
  last_error: "502",
  created_at: T0 - 1_000,
  delivered_at: null,
  message_id: null,
});

describe("one outbox, several channels", () => {
  it("sends a cron result and a chat message in one pass, each channel's backlog and retention its own", async () => {
    const t = await setup();
    const platform = new FakePlatform("fake", [
      { message: "502", retryable: true, retry_after_ms: null, plain_text: false },
    ]);
    const outputDir = join(t.paths.cron, "output");
    const outbox = await both(t.store, platform, outputDir, () => t.clock.now);
    await outbox.enqueue(chatEntryInput({ message: send("1", "hello") }, T0));
    await outbox.enqueue({
      channel: "cron",
      id: "cron:nightly/000000000000001/failing",
      payload: {
        run_key: "nightly/000000000000001",
        job: "nightly",
        what: "failing",
        target: "local",
        body: "{}",
      },
    });
    await outbox.kick();
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 0 });
    expect((await listOutbox(t.store)).map((e) => e.state)).toEqual(["delivered"]);
    expect(readFileSync(join(outputDir, "nightly", "notices.log"), "utf8")).toContain(
      "[nightly/000000000000001/failing]",
    );
    // The chat's first attempt failed: its backlog shows it, cron's is empty.
    const backlog = await outbox.backlog();
    expect(backlog.fake).toMatchObject({ pending: 1, last_error: "502" });
    expect(backlog.cron).toMatchObject({ pending: 0, given_up: 0 });
    t.clock.now += 2_000;
    expect((await outbox.deliverDue()).delivered).toBe(1);
    expect(platform.texts()).toEqual(["hello", "hello"]);
    // A chat message is kept a day, a cron delivery thirty.
    t.clock.now += 25 * HOUR;
    expect(await outbox.prune()).toBe(1);
    expect((await listEntries(t.store)).map((e) => e.channel)).toEqual(["cron"]);
    t.clock.now += 30 * 24 * HOUR;
    expect(await outbox.prune()).toBe(1);
    expect(await listEntries(t.store)).toEqual([]);
  });

  it("moves an earlier Tenax's entries in once, keeping their state and order, and sends the pending ones once", async () => {
    const t = await setup();
    const platform = new FakePlatform();
    const outputDir = join(t.paths.cron, "output");
    await t.store.write([
      putOp(CRON_LEGACY_KIND, "nightly/1/failing", legacyCron("nightly/1", "pending"), T0),
      putOp(CRON_LEGACY_KIND, "nightly/0/failing", legacyCron("nightly/0", "delivered"), T0),
      putOp(PLATFORM_LEGACY_KIND, "fake:1/b", legacyChat("b", "second", "000000000000002-000001-b"), T0),
      putOp(PLATFORM_LEGACY_KIND, "fake:1/a", legacyChat("a", "first", "000000000000001-000001-a"), T0),
      // Another platform's entry: left for the process that has that platform.
      putOp(
        PLATFORM_LEGACY_KIND,
        "other:1/c",
        { ...legacyChat("c", "x", "1"), key: "other:1/c", platform: "other" },
        T0,
      ),
    ]);
    // Two processes start at once: each adopts what the other has not, and nothing goes twice.
    const one = await both(t.store, platform, outputDir, () => t.clock.now);
    const two = await both(t.store, platform, outputDir, () => t.clock.now);
    const reports = await Promise.all([one.deliverDue(), two.deliverDue()]);
    expect(reports.reduce((n, r) => n + r.delivered, 0)).toBe(3);
    expect(platform.texts()).toEqual(["first", "second"]);
    expect(
      readFileSync(join(outputDir, "nightly", "notices.log"), "utf8").match(/started failing/g),
    ).toHaveLength(1);
    expect((await listOutbox(t.store)).map((e) => [e.run_key, e.state, e.attempts])).toEqual([
      ["nightly/0", "delivered", 1],
      ["nightly/1", "delivered", 3],
    ]);
    expect((await listChatEntries(t.store)).map((e) => [e.key, e.state, e.attempts, e.receipt])).toEqual([
      ["fake:1/a", "delivered", 2, "100"],
      ["fake:1/b", "delivered", 2, "101"],
    ]);
    expect(await t.store.listRecords(CRON_LEGACY_KIND)).toEqual([]);
    expect((await t.store.listRecords(PLATFORM_LEGACY_KIND)).map((r) => r.key)).toEqual(["other:1/c"]);
  });
});
