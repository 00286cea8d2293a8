// The cron outbox on a real store and a real HTTP receiver: retried until a 2xx, never sent again
// after one (across a restart too), given up on a client error or past the attempts allowed, the
// receiver's Retry-After honoured, local files written once, and [SILENT] replies never queued.
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { deadOwnerTag } from "../../test/helpers/dead-owner.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { Scheduler } from "../agent/scheduler.js";
import { ownerOf } from "../core/process-owner.js";
import { listOutboxEntries, OUTBOX_KIND as PLATFORM_OUTBOX_KIND } from "../platforms/outbox-records.js";
import type { ProfilePaths } from "../profile/paths.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { newRun } from "./claim.js";
import { CronOutbox, type OutboxOptions, outboxOps } from "./delivery.js";
import type { CronEvent } from "./host.js";
import {
  type JobRecord,
  listOutbox,
  OUTBOX_KIND,
  type OutboxRecord,
  putOp,
  type RunRecord,
} from "./records.js";

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
  const outbox = (store: Store, options: Partial<OutboxOptions> = {}) =>
    new CronOutbox({
      store,
      outputDir: join(paths.cron, "output"),
      now: () => clock.now,
      random: () => 0.5,
      onEvent: (e) => events.push(e),
      ...options,
    });
  return { paths, store, clock, events, outbox };
}

const entry = async (store: Store, key: string): Promise<OutboxRecord | undefined> =>
  (await listOutbox(store)).find((e) => e.key === key);

describe("outboxOps", () => {
  it("queues a result and a notice, none for [SILENT] or a skipped run", () => {
    const j = job("local");
    const ok = run(j, 1);
    const ops = outboxOps(ok, j, { kind: "recovered", text: "back", streak: 2 }, T0);
    expect(ops.map((o) => [o.kind, o.key])).toEqual([
      [OUTBOX_KIND, `${ok.run_key}/result`],
      [OUTBOX_KIND, `${ok.run_key}/recovered`],
    ]);
    const body = JSON.parse((JSON.parse(ops[0]?.value ?? "{}") as OutboxRecord).body);
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
    expect(silentButFailing.map((o) => o.key)).toEqual([`${run(j, 4).run_key}/failing`]);
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
    expect(ops.map((o) => o.kind)).toEqual([PLATFORM_OUTBOX_KIND, PLATFORM_OUTBOX_KIND]);
    const t = await setup();
    await t.store.write(ops);
    const queued = await listOutboxEntries(t.store);
    expect(queued.map((e) => [e.chat_key, e.origin, e.state])).toEqual([
      ["telegram:-1001", `cron:${failed.run_key}`, "pending"],
      ["telegram:-1001", `cron:${failed.run_key}`, "pending"],
    ]);
    const texts = queued.map((e) => (e.op.type === "send" ? e.op.text : ""));
    expect(texts).toContain("**nightly-report** failed: provider down");
    expect(texts).toContain("nightly-report started failing");
    // The run's end is written once; writing it again (a replay) queues nothing twice.
    await t.store.write(ops);
    expect(await listOutboxEntries(t.store)).toHaveLength(2);
    // Nothing for the cron outbox: cron's webhook sender never sees a chat target.
    expect(await listOutbox(t.store)).toEqual([]);
    expect(outboxOps(run(j, 2, { reply: "[SILENT]", silent: true }), j, null, T0)).toEqual([]);
    const ok = outboxOps(run(j, 3, { missed: true }), j, null, T0);
    expect(JSON.parse(ok[0]?.value ?? "{}").op.text).toBe(
      "**nightly-report** (a catch-up run for a missed time)\n\nreport 3",
    );
  });
});

describe("CronOutbox", () => {
  it("retries 500, 500, then delivers on 200 exactly once, and never again", async () => {
    const hook = await receiver([status(500), status(500), status(200)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const r = run(j, 1);
    await t.store.write(outboxOps(r, j, null, t.clock.now));
    const outbox = t.outbox(t.store);
    const key = `${r.run_key}/result`;

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
      "idempotency-key": key,
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
      pending: 0,
      given_up: 0,
      oldest_pending_at: null,
      last_error: null,
    });
  });

  it("honours Retry-After on a 429", async () => {
    const hook = await receiver([status(429, { "retry-after": "2" })]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const r = run(j, 1);
    await t.store.write(outboxOps(r, j, null, t.clock.now));
    await t.outbox(t.store).deliverDue();
    const e = await entry(t.store, `${r.run_key}/result`);
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
    expect(await entry(t.store, `${ra.run_key}/result`)).toMatchObject({ state: "given_up", attempts: 1 });
    expect((await entry(t.store, `${ra.run_key}/result`))?.last_error).toContain("answered 404");
    t.clock.now += HOUR;
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 1 });
    expect(await entry(t.store, `${rb.run_key}/result`)).toMatchObject({ state: "given_up", attempts: 2 });
    t.clock.now += HOUR;
    await outbox.deliverDue();
    expect([missing.seen.length, broken.seen.length]).toEqual([1, 2]);
    expect(t.events.filter((e) => e.type === "cron_delivery_given_up")).toHaveLength(2);
    const backlog = await outbox.backlog();
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
    const notice = (await entry(t.store, `${r.run_key}/failing`)) as OutboxRecord;
    t.clock.now += 1_000;
    await t.store.write([
      putOp(OUTBOX_KIND, notice.key, { ...notice, state: "pending", next_at: t.clock.now }, t.clock.now),
    ]);
    expect((await outbox.deliverDue()).delivered).toBe(1);
    const log = readFileSync(join(dir, "notices.log"), "utf8");
    expect(log.split("\n").filter((l) => l.includes("started failing"))).toHaveLength(1);
    expect(log).toContain(`[${notice.key}]`);
  });

  it("after a restart resends the pending entry and not the delivered one", async () => {
    let refuse = "";
    const hook = await receiver([
      (res) => status(res.req.headers["idempotency-key"] === refuse ? 500 : 200)(res),
    ]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const first = run(j, 1);
    const second = run(j, 2);
    refuse = `${second.run_key}/result`;
    await t.store.write([
      ...outboxOps(first, j, null, t.clock.now),
      ...outboxOps(second, j, null, t.clock.now),
    ]);
    expect(await t.outbox(t.store).deliverDue()).toEqual({ delivered: 1, failed: 1, given_up: 0 });
    await releaseStore(t.store);

    refuse = "";
    const again = await setup(t.paths);
    again.clock.now = t.clock.now + HOUR;
    const outbox = again.outbox(again.store);
    expect(await outbox.deliverDue()).toEqual({ delivered: 1, failed: 0, given_up: 0 });
    again.clock.now += HOUR;
    expect(await outbox.deliverDue()).toEqual({ delivered: 0, failed: 0, given_up: 0 });
    const count = (key: string) =>
      hook.seen.filter((s) => s.headers["idempotency-key"] === `${key}/result`).length;
    expect(count(first.run_key)).toBe(1);
    expect(count(second.run_key)).toBe(2);
    expect((await listOutbox(again.store)).map((e) => e.state)).toEqual(["delivered", "delivered"]);
    await releaseStore(again.store);
  });

  it("takes over at once a lease whose process was killed, and waits out one a live process holds", async () => {
    const hook = await receiver([status(200)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const killed = run(j, 1);
    const live = run(j, 2);
    await t.store.write([
      ...outboxOps(killed, j, null, t.clock.now),
      ...outboxOps(live, j, null, t.clock.now),
    ]);
    const leaseEnd = t.clock.now + 40_000;
    const lease = async (key: string, by: string) => {
      const e = (await entry(t.store, key)) as OutboxRecord;
      await t.store.write([
        putOp(OUTBOX_KIND, key, { ...e, next_at: leaseEnd, leased_by: by }, t.clock.now + 1),
      ]);
    };
    await lease(`${killed.run_key}/result`, await deadOwnerTag());
    await lease(`${live.run_key}/result`, ownerOf());
    const outbox = t.outbox(t.store);
    expect(await outbox.deliverDue()).toEqual({ delivered: 1, failed: 0, given_up: 0 });
    expect(hook.seen.map((s) => s.headers["idempotency-key"])).toEqual([`${killed.run_key}/result`]);
    expect(await entry(t.store, `${killed.run_key}/result`)).not.toHaveProperty("leased_by");
    t.clock.now = leaseEnd;
    expect((await outbox.deliverDue()).delivered).toBe(1);
  });

  it("sends an entry once when two passes, or two outboxes on one store, overlap", async () => {
    const hook = await receiver([(res) => setTimeout(() => status(200)(res), 150)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const r = run(j, 1);
    await t.store.write(outboxOps(r, j, null, t.clock.now));
    const one = t.outbox(t.store);
    const other = t.outbox(t.store);
    const reports = await Promise.all([one.deliverDue(), one.deliverDue(), other.deliverDue()]);
    expect(reports.reduce((n, x) => n + x.delivered, 0)).toBe(1);
    expect(hook.seen).toHaveLength(1);
  });

  it("never resends an entry another outbox delivered while this one's pass waited to reach it", async () => {
    const hook = await receiver([(res) => setTimeout(() => status(200)(res), 40)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    // More entries than a pass sends at once: the last ones are reached only after the first end.
    const runs = Array.from({ length: 12 }, (_, i) => run(j, i + 1));
    await t.store.write(runs.flatMap((r) => outboxOps(r, j, null, t.clock.now)));
    const reports = await Promise.all([t.outbox(t.store).deliverDue(), t.outbox(t.store).deliverDue()]);
    expect(reports.reduce((n, x) => n + x.delivered, 0)).toBe(12);
    expect(hook.seen).toHaveLength(12);
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
    expect((await entry(t.store, `${r.run_key}/result`))?.last_error).toContain("no answer within 200 ms");
  });
});

describe("CronOutbox passes", () => {
  it("a kick during a pass runs one more, which sends what was written meanwhile", async () => {
    const hook = await receiver([(res) => setTimeout(() => status(200)(res), 100)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const outbox = t.outbox(t.store);
    await t.store.write(outboxOps(run(j, 1), j, null, t.clock.now));
    const first = outbox.kick();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await t.store.write(outboxOps(run(j, 2), j, null, t.clock.now));
    const second = outbox.kick();
    expect(second).toBe(first);
    await second;
    expect(hook.seen).toHaveLength(2);
    expect((await listOutbox(t.store)).map((e) => e.state)).toEqual(["delivered", "delivered"]);
  });

  it("maintainOn delivers on the process's scheduler until stopped", async () => {
    const hook = await receiver([status(204)]);
    const t = await setup();
    const j = job(`webhook:${hook.url}`);
    const scheduler = new Scheduler();
    const outbox = t.outbox(t.store);
    outbox.maintainOn(scheduler, 20);
    expect(scheduler.size).toBe(2);
    await t.store.write(outboxOps(run(j, 1), j, null, t.clock.now));
    for (let i = 0; i < 100 && hook.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(hook.seen).toHaveLength(1);
    outbox.stop();
    expect(scheduler.size).toBe(0);
    scheduler.stop();
  });
});
