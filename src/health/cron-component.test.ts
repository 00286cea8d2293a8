// The cron health component over a real store file, its records written by hand as the engine
// would: one test per rule that makes it degraded, and the ok line.
import { afterEach, describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { defaultConfig } from "../config/schema.js";
import { CRON_CHANNEL, cronEntryKey } from "../cron/delivery.js";
import type { CronStats } from "../cron/host.js";
import {
  HEALTH_KIND,
  type HealthRecord,
  JOB_KIND,
  type JobRecord,
  putOp,
  RUN_KIND,
  type RunRecord,
  runKey,
  SLOT_KIND,
} from "../cron/records.js";
import { parseSchedule } from "../cron/schedule.js";
import { newEntry, OUTBOX_KIND, type OutboxEntry } from "../outbox/entry.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { cronComponent, gatewayCronComponent } from "./cron-component.js";
import { cronMetrics } from "./cron-metrics.js";
import { readCronSnapshot } from "./cron-snapshot.js";
import { newCounters, renderMetrics } from "./metrics.js";

const M = 60_000;
const H = 60 * M;
const NOW = Date.parse("2026-06-01T22:00:00Z");

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await releaseStore(s);
});

async function store(): Promise<Store> {
  const s = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
  stores.push(s);
  return s;
}

function job(name: string, spec: string, over: Partial<JobRecord> = {}): JobRecord {
  return {
    name,
    schedule: parseSchedule(spec, { timezone: "UTC", now: NOW - 24 * H }),
    prompt: "do it",
    model: null,
    dir: null,
    timeout_s: null,
    deliver: "local",
    enabled: true,
    catch_up: true,
    created_at: NOW - 24 * H,
    updated_at: NOW - 24 * H,
    ...over,
  };
}

function run(jobName: string, occurrence: number, over: Partial<RunRecord> = {}): RunRecord {
  return {
    run_key: runKey(jobName, occurrence),
    run_id: `run_${occurrence}`,
    job: jobName,
    occurrence,
    trigger: "schedule",
    missed: false,
    state: "ok",
    reason: null,
    count: 1,
    until: null,
    owner: null,
    claimed_at: occurrence,
    started_at: occurrence,
    ended_at: occurrence + 5000,
    session_id: null,
    turn_id: null,
    reply: "done",
    error: null,
    error_code: null,
    silent: false,
    deliver: "local",
    resumed: 0,
    ...over,
  };
}

/** The slot as the scheduler leaves it: every occurrence up to `slot` claimed. */
/** A cron result in the outbox, to a webhook, with these fields. */
function delivery(job: string, runKey: string, over: Partial<OutboxEntry>): OutboxEntry {
  const payload = {
    run_key: runKey,
    job,
    what: "result" as const,
    target: "webhook:https://hooks.example.com/x",
    body: "{}",
  };
  const { entry } = newEntry({ channel: CRON_CHANNEL, id: cronEntryKey(payload), payload }, NOW);
  return { ...entry, ...over };
}

const slot = (j: JobRecord, at: number) =>
  putOp(SLOT_KIND, j.name, { name: j.name, slot: at, job_created_at: j.created_at, updated_at: at }, at);

const stats = (over: Partial<CronStats> = {}): CronStats => ({
  lag_ms: { last: 20, max: 40, p99: 35, samples: 10 },
  running: 0,
  queued: 0,
  started_total: 3,
  per_job: {},
  next_due_at: null,
  jobs: 1,
  ...over,
});

describe("cronComponent", () => {
  it("is ok with no jobs", async () => {
    const c = await cronComponent(await store(), NOW, null);
    expect(c).toMatchObject({ status: "ok", detail: "no cron jobs", next: null, jobs: 0 });
  });

  it("is ok with the next due job, its time and the last run", async () => {
    const s = await store();
    const nightly = job("nightly-report", "0 3 * * *");
    const hourly = job("hourly", "0 * * * *");
    const paused = job("paused", "0 * * * *", { enabled: false });
    await s.write([
      putOp(JOB_KIND, nightly.name, nightly, NOW),
      putOp(JOB_KIND, hourly.name, hourly, NOW),
      putOp(JOB_KIND, paused.name, paused, NOW),
      slot(nightly, NOW - 19 * H),
      slot(hourly, NOW),
      putOp(RUN_KIND, runKey("hourly", NOW), run("hourly", NOW), NOW),
    ]);
    // 22:00 now: hourly is next at 23:00, in an hour; nightly at 03:00 tomorrow.
    const c = await cronComponent(s, NOW + 10_000, stats(), { timezone: "UTC" });
    expect(c.status).toBe("ok");
    expect(c.detail).toBe(
      "3 jobs (1 paused), next due hourly at 23:00 (in 59 min 50 s), last run ok (hourly, 5 s ago)",
    );
    expect(c).toMatchObject({
      jobs: 3,
      enabled: 2,
      next_due: { job: "hourly", at: NOW + H },
      failing: [],
      outbox: { pending: 0, given_up: 0 },
      lag_ms: { p99: 35 },
    });
  });

  it("is degraded by a failure streak, naming the job, the streak, the error and the command", async () => {
    const s = await store();
    const j = job("nightly-report", "0 3 * * *");
    const health: HealthRecord = {
      name: j.name,
      streak: 3,
      failing_since: Date.parse("2026-05-30T03:00:05Z"),
      notified: true,
      last_status: "failed",
      last_run_key: runKey(j.name, NOW - 19 * H),
      last_ended_at: NOW - 19 * H,
      last_error: "rate_limit: the provider refused (429)",
      updated_at: NOW - 19 * H,
    };
    await s.write([
      putOp(JOB_KIND, j.name, j, NOW),
      slot(j, NOW - 19 * H),
      putOp(HEALTH_KIND, j.name, health, NOW),
    ]);
    const c = await cronComponent(s, NOW, null, { profile: "work", timezone: "UTC" });
    expect(c.status).toBe("degraded");
    expect(c.detail).toBe(
      "nightly-report failed 3 runs in a row since May 30 03:00 (last error: rate_limit: the provider refused (429))",
    );
    expect(c.next).toBe("tenax --profile work cron runs nightly-report");
    expect(c.failing).toEqual([
      { job: "nightly-report", streak: 3, since: health.failing_since, last_error: health.last_error },
    ]);
  });

  it("is degraded by a delivery given up, naming the target", async () => {
    const s = await store();
    const j = job("digest", "0 * * * *");
    const entry = delivery(j.name, runKey(j.name, NOW - H), {
      state: "given_up",
      attempts: 8,
      next_at: NOW,
      last_error: "HTTP 500",
      created_at: NOW - H,
    });
    await s.write([putOp(JOB_KIND, j.name, j, NOW), slot(j, NOW), putOp(OUTBOX_KIND, entry.key, entry, NOW)]);
    const c = await cronComponent(s, NOW, null);
    expect(c.status).toBe("degraded");
    expect(c.detail).toBe(
      "the result of digest was not delivered to webhook:https://hooks.example.com/x: given up after 8 attempts (HTTP 500)",
    );
    expect(c.next).toBe("tenax cron runs digest");
    expect(c.outbox).toEqual({ pending: 0, given_up: 1 });
  });

  it("is degraded by a pending delivery older than an hour, not by a fresh one", async () => {
    const s = await store();
    const j = job("digest", "0 * * * *");
    const entry = (key: string, created_at: number) =>
      delivery(j.name, key, {
        attempts: 2,
        next_at: NOW + M,
        last_error: "connect ECONNREFUSED",
        created_at,
      });
    const a = entry("a", NOW - M);
    const b = entry("b", NOW - 2 * H);
    await s.write([putOp(JOB_KIND, j.name, j, NOW), slot(j, NOW), putOp(OUTBOX_KIND, a.key, a, NOW)]);
    expect((await cronComponent(s, NOW, null)).status).toBe("ok");
    await s.write([putOp(OUTBOX_KIND, b.key, b, NOW)]);
    const c = await cronComponent(s, NOW, null);
    expect(c.status).toBe("degraded");
    expect(c.detail).toContain("1 delivery has waited over 1 h 0 min");
    expect(c.detail).toContain("digest to webhook:https://hooks.example.com/x, for 2 h 0 min");
    expect(c.next).toBe("tenax cron runs digest");
    expect(c.outbox).toEqual({ pending: 2, given_up: 0 });
  });

  it("is degraded when the scheduler's p99 lag is over a second", async () => {
    const s = await store();
    const j = job("hourly", "0 * * * *");
    await s.write([putOp(JOB_KIND, j.name, j, NOW), slot(j, NOW)]);
    expect((await cronComponent(s, NOW, stats())).status).toBe("ok");
    const c = await cronComponent(
      s,
      NOW,
      stats({ lag_ms: { last: 900, max: 2500, p99: 1800, samples: 40 } }),
    );
    expect(c.status).toBe("degraded");
    expect(c.detail).toContain("1.8 s at the 99th percentile");
    expect(c.next).toContain("event loop");
  });

  it("is degraded by runs queued for over ten minutes, naming the settings", async () => {
    const s = await store();
    const j = job("hourly", "0 * * * *");
    await s.write([
      putOp(JOB_KIND, j.name, j, NOW),
      slot(j, NOW),
      putOp(
        RUN_KIND,
        "q1",
        run(j.name, NOW - 5 * M, {
          state: "queued",
          claimed_at: NOW - 5 * M,
          started_at: null,
          ended_at: null,
        }),
        NOW,
      ),
    ]);
    expect((await cronComponent(s, NOW, null)).status).toBe("ok");
    await s.write([
      putOp(
        RUN_KIND,
        "q2",
        run(j.name, NOW - 20 * M, {
          state: "missed",
          claimed_at: NOW - 20 * M,
          started_at: null,
          ended_at: null,
        }),
        NOW,
      ),
    ]);
    const c = await cronComponent(s, NOW, null);
    expect(c.status).toBe("degraded");
    expect(c.detail).toBe(
      "1 run waiting for a free slot for over 10 min 0 s (the oldest, hourly, for 20 min 0 s); cron.max_concurrent / gateway.max_turns",
    );
    expect(c.next).toContain("cron.max_concurrent or gateway.max_turns");
  });

  it("is degraded by an owed run left unclaimed past two minutes, only with the scheduler here", async () => {
    const s = await store();
    const j = job("hourly", "0 * * * *");
    // Claimed up to 21:00; 22:00 is owed.
    await s.write([putOp(JOB_KIND, j.name, j, NOW), slot(j, NOW - H)]);
    expect((await cronComponent(s, NOW + M, stats())).status).toBe("ok");
    // Without the scheduler in this process nobody is expected to have claimed it.
    expect((await cronComponent(s, NOW + 5 * M, null)).status).toBe("ok");
    const c = await cronComponent(s, NOW + 5 * M, stats(), { timezone: "UTC" });
    expect(c.status).toBe("degraded");
    expect(c.detail).toBe(
      "hourly was due at 22:00 (5 min 0 s ago) and the scheduler running here has not claimed it",
    );
    // A paused job owes nothing.
    await s.write([putOp(JOB_KIND, j.name, { ...j, enabled: false }, NOW)]);
    expect((await cronComponent(s, NOW + 5 * M, stats())).status).toBe("ok");
  });
});

describe("gatewayCronComponent", () => {
  it("says when this gateway runs no jobs (cron.enabled: false) and what runs them", async () => {
    const s = await store();
    const j = job("hourly", "0 * * * *");
    await s.write([putOp(JOB_KIND, j.name, j, NOW), slot(j, NOW)]);
    const paths = tempProfile("work");
    const view = { snapshot: await readCronSnapshot(s, NOW), stats: null };
    const on = await gatewayCronComponent(paths, defaultConfig(), view, NOW);
    expect(on.detail).not.toContain("cron.enabled");
    const config = defaultConfig();
    config.cron.enabled = false;
    const off = await gatewayCronComponent(paths, config, view, NOW);
    expect(off.status).toBe("ok");
    expect(off.detail).toMatch(
      /; this gateway runs no jobs \(cron\.enabled: false\): tenax --profile work cron tick runs what is due$/,
    );
  });
});

describe("cronMetrics", () => {
  it("gives each job's gauges and runs by state, from the store or the engine", async () => {
    const s = await store();
    const j = job('we"ird\\job', "0 * * * *");
    await s.write([
      putOp(JOB_KIND, j.name, j, NOW),
      slot(j, NOW),
      putOp(RUN_KIND, "r1", run(j.name, NOW - H), NOW),
      putOp(RUN_KIND, "r2", run(j.name, NOW, { state: "failed", error: "boom" }), NOW),
    ]);
    const rows: string[] = [];
    const emit = (name: string, _t: string, _h: string, r: [Record<string, string>, number][]) => {
      for (const [labels, v] of r) rows.push(`${name} ${JSON.stringify(labels)} ${v}`);
    };
    const snapshot = await readCronSnapshot(s, NOW);
    cronMetrics(emit, { snapshot, stats: null });
    expect(rows).toContain(`tenax_cron_job_enabled {"job":"we\\"ird\\\\job"} 1`);
    expect(rows).toContain(
      `tenax_cron_job_next_due_timestamp_seconds {"job":"we\\"ird\\\\job"} ${(NOW + H) / 1000}`,
    );
    expect(rows).toContain(
      `tenax_cron_job_last_run_timestamp_seconds {"job":"we\\"ird\\\\job"} ${(NOW + 5000) / 1000}`,
    );
    expect(rows).toContain(`tenax_cron_job_runs_total {"job":"we\\"ird\\\\job","state":"ok"} 1`);
    expect(rows).toContain(`tenax_cron_job_runs_total {"job":"we\\"ird\\\\job","state":"failed"} 1`);
    expect(rows.some((r) => r.startsWith("tenax_cron_scheduler_lag_seconds"))).toBe(false);
    rows.length = 0;
    cronMetrics(emit, {
      snapshot,
      stats: stats({ per_job: { [j.name]: { started: 4, ended: { ok: 4 } } } }),
    });
    expect(rows).toContain(`tenax_cron_job_runs_total {"job":"we\\"ird\\\\job","state":"ok"} 4`);
    expect(rows).toContain("tenax_cron_scheduler_lag_seconds {} 0.035");
  });

  it("renders in /metrics with HELP and TYPE lines and the job label escaped", async () => {
    const s = await store();
    const j = job('we"ird\\job', "0 * * * *");
    await s.write([putOp(JOB_KIND, j.name, j, NOW), slot(j, NOW)]);
    const text = renderMetrics(
      { status: "ok", checked_at: NOW, components: {} },
      newCounters(),
      [],
      { turns_in_flight: 0, event_clients: 0, started_at: NOW },
      null,
      { snapshot: await readCronSnapshot(s, NOW), stats: null },
    );
    expect(text).toContain("# HELP tenax_cron_job_enabled ");
    expect(text).toContain("# TYPE tenax_cron_job_enabled gauge\n");
    expect(text).toContain("# TYPE tenax_cron_job_runs_total counter\n");
    expect(text).toContain('tenax_cron_job_enabled{job="we\\"ird\\\\job"} 1\n');
    expect(text).toContain("tenax_cron_outbox_given_up 0\n");
  });
});
