// Cron's channel of the outbox on a real store and a real HTTP receiver: retried until a 2xx and
// never sent again after one, given up on a client error or past the attempts allowed, the
// receiver's Retry-After honoured, local files written once, and [SILENT] replies never queued.
// What the outbox itself promises (leases, restarts, two processes, passes) is tested once, in
// src/outbox.
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { OUTBOX_KIND } from "../outbox/entry.js";
import { Outbox } from "../outbox/outbox.js";
import { listChatEntries } from "../platforms/outbox-records.js";
import type { ProfilePaths } from "../profile/paths.js";
import { openStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { newRun } from "./claim.js";
import {
  type CronChannelOptions,
  type CronDelivery,
  cronChannel,
  cronEntryKey,
  listOutbox,
  outboxOps,
} from "./delivery.js";
import type { CronEvent } from "./host.js";
import { type JobRecord, putOp, type RunRecord } from "./records.js";

const T0 = Date.parse("2026-12-01T03:00:00Z");
const HOUR = 3_600_000;

interface Seen {
  body: string;
  headers: IncomingMessage["headers"];
}

const servers: { close(): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A receiver answering each request with the next of `answers` (the last one repeats). */
async function receiver(answers: ((res: ServerResponse) => void)[]): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
      const answer = answers[Math.min(seen.length - 1, answers.length - 1)];
      answer?.(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push({
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook/secret-token`, seen };
}

const status =
  (code: number, headers: Record<string, string> = {}) =>
  (res: ServerResponse) => {
    res.writeHead(code, headers);
    res.end("x");
  };

function job(deliver: string): JobRecord {
  return {
    name: "nightly-report",
    schedule: { kind: "every", spec: "every 1h", period_ms: HOUR, anchor: T0, timezone: "UTC" },
    prompt: "report",
    model: null,
    dir: null,
    timeout_s: null,
    deliver,
    enabled: true,
    catch_up: true,
    created_at: T0 - HOUR,
    updated_at: T0 - HOUR,
  };
}

function run(j: JobRecord, i: number, fields: Partial<RunRecord> = {}): RunRecord {
  return newRun(
    j,
    {
      occurrence: T0 + i * HOUR,
      trigger: "schedule",
      state: "ok",
      started_at: T0 + i * HOUR,
      ended_at: T0 + i * HOUR + 5_000,
      reply: `report ${i}`,
      session_id: `ses_${i}`,
      ...fields,
    },
    null,
    T0 + i * HOUR,
  );
}

async function setup(paths: ProfilePaths = tempProfile()) {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const clock = { now: T0 + HOUR };
  const events: CronEvent[] = [];
  const outbox = (store: Store, options: Partial<CronChannelOptions> = {}) =>
    new Outbox({ store, now: () => clock.now }).add(
      cronChannel({
        outputDir: join(paths.cron, "output"),
        random: () => 0.5,
        onEvent: (e) => events.push(e),
        ...options,
      }),
    );
  return { paths, store, clock, events, outbox };
}

/** A run's delivery of `what`, as listOutbox shows it. */
const entry = async (store: Store, runKey: string, what = "result"): Promise<CronDelivery | undefined> =>
  (await listOutbox(store)).find((e) => e.run_key === runKey && e.what === what);

describe("outboxOps", () => {
  it("queues a result and a notice, none for [SILENT] or a skipped run", () => {
    const j = job("local");
    const ok = run(j, 1);
    const ops = outboxOps(ok, j, { kind: "recovered", text: "back", streak: 2 }, T0);
    expect(ops.map((o) => [o.kind, o.key])).toEqual([
      [OUTBOX_KIND, `cron:${ok.run_key}/result`],
      [OUTBOX_KIND, `cron:${ok.run_key}/recovered`],
    ]);
    const body = JSON.parse(JSON.parse(ops[0]?.value ?? "{}").payload.body);
    expect(body).toMatchObject({
      type: "cron.run",
      job: "nightly-report",
      run_key: ok.run_key,
      occurrence: "2026-12-01T04:00:00.000Z",
      state: "ok",
      reply: "report 1",
      session_id: "ses_1",
    });
    expect(outboxOps(run(j, 2, { reply: "[SILENT]", silent: true }), j, null, T0)).toEqual([]);
    expect(outboxOps(run(j, 3, { state: "skipped", reason: "missed" }), j, null, T0)).toEqual([]);
    const silentButFailing = outboxOps(
      run(j, 4, { silent: true }),
      j,
      { kind: "failing", text: "t", streak: 1 },
      T0,
    );
    expect(silentButFailing.map((o) => o.key)).toEqual([`cron:${run(j, 4).run_key}/failing`]);
  });

  it("a telegram:CHAT target queues chat messages in the platforms' outbox, in the run's own write", async () => {
    const j = job("telegram:-1001");
    const failed = run(j, 1, { state: "failed", error: "provider down", reply: "" });
    const ops = outboxOps(
      failed,
      j,
      { kind: "failing", text: "nightly-report started failing", streak: 1 },
      T0,
    );
    expect(ops.map((o) => o.kind)).toEqual([OUTBOX_KIND, OUTBOX_KIND]);
    const t = await setup();
    await t.store.write(ops);
    const queued = await listChatEntries(t.store);
    expect(queued.map((e) => [e.channel, e.lane, e.origin, e.state])).toEqual([
      ["telegram", "telegram:-1001", `cron:${failed.run_key}`, "pending"],
      ["telegram", "telegram:-1001", `cron:${failed.run_key}`, "pending"],
    ]);
    const texts = queued.map((e) => (e.payload.type === "send" ? e.payload.text : ""));
    expect(texts).toContain("**nightly-report** failed: provider down");
    expect(texts).toContain("nightly-report started failing");
    // The run's end is written once; writing it again (a replay) queues nothing twice.
    await t.store.write(ops);
    expect(await listChatEntries(t.store)).toHaveLength(2);
    // Nothing for cron's channel: its webhook sender never sees a chat target.
    expect(await listOutbox(t.store)).toEqual([]);
    expect(outboxOps(run(j, 2, { reply: "[SILENT]", silent: true }), j, null, T0)).toEqual([]);
    const ok = outboxOps(run(j, 3, { missed: true }), j, null, T0);
    expect(JSON.parse(ok[0]?.value ?? "{}").payload.text).toBe(
      "**nightly-report** (a catch-up run for a missed time)\n\nreport 3",
    );
  });
});

describe("the cron channel", () => {
  it("retries 500, 500, then delivers on 200 exactly once, and never again", async () => {
    const hook = await receiver([status(500), status(500), status(200)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const r = run(j, 1);
    await t.store.write(outboxOps(r, j, null, t.clock.now));
    const outbox = t.outbox(t.store);
    const key = r.run_key;

    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 1, given_up: 0 });
    expect(await entry(t.store, key)).toMatchObject({
      state: "pending",
      attempts: 1,
      next_at: t.clock.now + 5_000,
    });
    expect((await entry(t.store, key))?.last_error).toBe(
      `webhook http://127.0.0.1:${new URL(hook.url).port} answered 500 Internal Server Error`,
    );
    // Not due yet: nothing is sent.
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 0 });
    t.clock.now += 5_000;
    expect((await outbox.deliverDue()).failed).toBe(1);
    expect((await entry(t.store, key))?.next_at).toBe(t.clock.now + 15_000);
    t.clock.now += 15_000;
    expect((await outbox.deliverDue()).delivered).toBe(1);
    expect(await entry(t.store, key)).toMatchObject({
      state: "delivered",
      attempts: 3,
      delivered_at: t.clock.now,
    });
    for (let i = 0; i < 3; i++) {
      t.clock.now += 24 * HOUR;
      await outbox.deliverDue();
    }
    const mine = hook.seen.filter((s) => s.body.includes(r.run_key));
    expect(mine).toHaveLength(3);
    expect(mine[2]?.headers).toMatchObject({
      "content-type": "application/json",
      "idempotency-key": `${r.run_key}/result`,
      "user-agent": "tenax-cron",
    });
    expect(JSON.parse(mine[2]?.body ?? "{}")).toMatchObject({
      type: "cron.run",
      run_key: r.run_key,
      reply: "report 1",
    });
    expect(t.events.map((e) => e.type)).toEqual([
      "cron_delivery_failed",
      "cron_delivery_failed",
      "cron_delivered",
    ]);
    // The webhook's path may hold a token: messages name only its origin.
    expect(t.events.some((e) => e.message.includes("secret-token"))).toBe(false);
    expect(await outbox.backlog()).toEqual({
      cron: {
        pending: 0,
        given_up: 0,
        oldest_pending_at: null,
        oldest_pending_age_ms: null,
        last_error: null,
      },
    });
  });

  it("honours Retry-After on a 429", async () => {
    const hook = await receiver([status(429, { "retry-after": "2" })]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const r = run(j, 1);
    await t.store.write(outboxOps(r, j, null, t.clock.now));
    await t.outbox(t.store).deliverDue();
    const e = await entry(t.store, r.run_key);
    expect(e?.next_at).toBe(t.clock.now + 2_000);
    expect(e?.last_error).toContain("429");
  });

  it("gives up at once on a 404, and past maxAttempts on 500s", async () => {
    const missing = await receiver([status(404)]);
    const broken = await receiver([status(503)]);
    const t = await setup();
    const a = job(`webhook:${missing.url}`);
    const b = job(`webhook:${broken.url}`);
    const ra = run(a, 1);
    const rb = run(b, 2);
    await t.store.write([...outboxOps(ra, a, null, t.clock.now), ...outboxOps(rb, b, null, t.clock.now)]);
    const outbox = t.outbox(t.store, { maxAttempts: 2 });
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 1, given_up: 1 });
    expect(await entry(t.store, ra.run_key)).toMatchObject({ state: "given_up", attempts: 1 });
    expect((await entry(t.store, ra.run_key))?.last_error).toContain("answered 404");
    t.clock.now += HOUR;
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 1 });
    expect(await entry(t.store, rb.run_key)).toMatchObject({ state: "given_up", attempts: 2 });
    t.clock.now += HOUR;
    await outbox.deliverDue();
    expect([missing.seen.length, broken.seen.length]).toEqual([1, 2]);
    expect(t.events.filter((e) => e.type === "cron_delivery_given_up")).toHaveLength(2);
    const backlog = (await outbox.backlog()).cron!;
    expect(backlog.given_up).toBe(2);
    expect(backlog.pending).toBe(0);
    expect(backlog.last_error).toContain("503");
    // Pruning keeps what is recent and deletes what is old.
    expect(await outbox.prune(10 * HOUR)).toBe(0);
    t.clock.now += 11 * HOUR;
    expect(await outbox.prune(10 * HOUR)).toBe(2);
    expect(await listOutbox(t.store)).toEqual([]);
  });

  it("writes a local result file once and appends a notice once, even if its mark was lost", async () => {
    const t = await setup();
    const j = job("local");
    const r = run(j, 1);
    await t.store.write(
      outboxOps(r, j, { kind: "failing", text: "nightly-report started failing", streak: 1 }, t.clock.now),
    );
    const outbox = t.outbox(t.store);
    expect((await outbox.deliverDue()).delivered).toBe(2);
    const dir = join(t.paths.cron, "output", "nightly-report");
    const file = `2026-12-01T04-00-00.000Z-${r.run_id}.md`;
    expect(readdirSync(dir).sort()).toEqual([file, "notices.log"]);
    const text = readFileSync(join(dir, file), "utf8");
    expect(text).toMatch(/^# nightly-report: ok\n/);
    expect(text.endsWith("\n\nreport 1\n")).toBe(true);
    // A crash between the append and the mark: the entry is pending again, the line is there.
    const key = cronEntryKey({ run_key: r.run_key, what: "failing" });
    const stored = JSON.parse((await t.store.getRecordText(OUTBOX_KIND, key)) ?? "{}");
    t.clock.now += 1_000;
    await t.store.write([
      putOp(OUTBOX_KIND, key, { ...stored, state: "pending", next_at: t.clock.now }, t.clock.now),
    ]);
    expect((await outbox.deliverDue()).delivered).toBe(1);
    const log = readFileSync(join(dir, "notices.log"), "utf8");
    expect(log.split("\n").filter((l) => l.includes("started failing"))).toHaveLength(1);
    expect(log).toContain(`[${r.run_key}/failing]`);
  });

  it("counts a receiver that does not answer in time as a failed attempt", async () => {
    const hook = await receiver([() => {}]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const r = run(j, 1);
    await t.store.write(outboxOps(r, j, null, t.clock.now));
    expect(await t.outbox(t.store, { timeoutMs: 200 }).deliverDue()).toEqual({
      delivered: 0,
      failed: 1,
      given_up: 0,
    });
    expect((await entry(t.store, r.run_key))?.last_error).toContain("no answer within 200 ms");
  });
});
