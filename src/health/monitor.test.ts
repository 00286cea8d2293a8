import { afterEach, describe, expect, it } from "vitest";
import { btreePages, checkpoint, overwritePages } from "../../test/helpers/corrupt.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { untilValue } from "../../test/helpers/until.js";
import { Scheduler } from "../agent/scheduler.js";
import { defaultConfig } from "../config/schema.js";
import type { CronStats } from "../cron/host.js";
import { JOB_KIND, putOp } from "../cron/records.js";
import { parseSchedule } from "../cron/schedule.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import type { StoreVerifier } from "../store/verifier.js";
import { EventHub } from "./event-hub.js";
import { probeLayers } from "./layer-probe.js";
import { HealthMonitor } from "./monitor.js";
import type { StatusReport } from "./status.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Probe = (signal: AbortSignal) => Promise<StatusReport>;

/** The real layer probe of a profile, as the gateway's worker thread runs it. */
const real = (s: { paths: ReturnType<typeof tempProfile>; config: ReturnType<typeof defaultConfig> }) => () =>
  probeLayers(s.paths, s.config, Date.now());

async function setup(probe?: Probe, timeoutMs = 300, cronStats?: () => CronStats | null) {
  const paths = tempProfile();
  const config = defaultConfig();
  const layers = probe ?? real({ paths, config });
  const store: Store = await openStore(paths);
  const scheduler = new Scheduler();
  const hub = new EventHub();
  const monitor = new HealthMonitor({
    paths,
    config,
    store,
    scheduler,
    hub,
    layers,
    intervalMs: 100,
    timeoutMs,
    gateway: () => ({ stopping: false, turnsInFlight: 0, maxTurns: 4, startedAt: Date.now(), address: null }),
    ...(cronStats ? { cronStats } : {}),
  });
  cleanup.push(
    () => releaseStore(store),
    () => scheduler.stop(),
    () => monitor.close(),
  );
  return { paths, config, store, scheduler, hub, monitor };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("HealthMonitor", () => {
  it("reads the cron component live, with the engine's numbers when it runs here", async () => {
    let stats: CronStats | null = null;
    const s = await setup(undefined, 300, () => stats);
    expect((await s.monitor.report()).components.cron).toMatchObject({
      status: "ok",
      detail: "no cron jobs",
    });
    const now = Date.now();
    await s.store.write([
      putOp(
        JOB_KIND,
        "hourly",
        {
          name: "hourly",
          schedule: parseSchedule("every 1h", { timezone: "UTC", now }),
          prompt: "p",
          model: null,
          dir: null,
          timeout_s: null,
          deliver: "local",
          enabled: true,
          catch_up: true,
          created_at: now,
          updated_at: now,
        },
        now,
      ),
    ]);
    expect((await s.monitor.report()).components.cron).toMatchObject({ status: "ok", jobs: 1, lag_ms: null });
    stats = {
      lag_ms: { last: 3000, max: 3000, p99: 3000, samples: 5 },
      running: 1,
      queued: 2,
      started_total: 5,
      per_job: {},
      next_due_at: null,
      jobs: 1,
    };
    const report = await s.monitor.report();
    expect(report.status).toBe("degraded");
    expect(report.components.cron).toMatchObject({ status: "degraded", running: 1, queued: 2 });
    expect(report.components.cron?.detail).toContain("the scheduler claims due runs late: 3.0 s");
  });

  it("reports every layer from the background probe, each with the age of its result", async () => {
    const s = await setup();
    s.monitor.start();
    await wait(250);
    const report = await s.monitor.report();
    expect(Object.keys(report.components)).toEqual([
      "gateway",
      "store",
      "providers",
      "credentials",
      "compression",
      "scheduler",
      "tools",
      "turns",
      "instances",
      "cron",
      "platforms",
      "mcp",
      "disk",
    ]);
    expect(report.status).toBe("ok");
    for (const c of Object.values(report.components)) {
      expect(c.checked_at).toBeTypeOf("number");
      expect(c.age_ms).toBeGreaterThanOrEqual(0);
      expect(c.age_ms).toBeLessThan(1000);
    }
    expect(report.components.store?.writable).toBe(true);
  });

  it("answers at once while the probe hangs, and says how long it has hung and how old its result is", async () => {
    let calls = 0;
    let release: () => void = () => {};
    const s = await setup((signal) => {
      calls++;
      if (calls === 1) return real(s)();
      // From the second probe on, the store "hangs": nothing answers until the deadline stops it.
      return new Promise<StatusReport>((_, reject) => {
        release = () => reject(new Error("released"));
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }, 5000);
    s.monitor.start();
    // report() is synchronous: it cannot wait for the hung probe, only read its last result; looked
    // at until that result is over 400 ms old (past the 100 ms interval, so the probe has hung).
    const report = await untilValue(
      () => s.monitor.report(),
      (r) => (r.components.store?.age_ms ?? 0) > 400,
      5_000,
      "a store result over 400 ms old",
    );
    const store = report.components.store;
    expect(store?.status).toBe("degraded");
    expect(store?.detail).toMatch(/has not answered for \d+ s; this result is \d+ s old/);
    expect(store?.age_ms).toBeGreaterThan(400);
    expect(report.status).toBe("degraded");
    release();
  });

  it("a probe past its deadline is stopped and reported as failed; the next one starts fresh", async () => {
    let calls = 0;
    const s = await setup((signal) => {
      calls++;
      if (calls === 1) return real(s)();
      return new Promise<StatusReport>((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
      );
    }, 200);
    s.monitor.start();
    // Looked at until a third probe has started and the store says a probe failed.
    const store = (
      await untilValue(
        () => s.monitor.report(),
        (r) => calls >= 3 && /the last check failed/.test(r.components.store?.detail ?? ""),
        5_000,
        "a third probe, after a failed one",
      )
    ).components.store;
    expect(store?.detail).toMatch(/the last check failed \(no answer within 1 s\)/);
    expect(store?.status).toBe("degraded");
    expect(calls).toBeGreaterThanOrEqual(3);
  });

  it("a probe that never succeeded is down, with the reason", async () => {
    const s = await setup(async () => {
      throw new Error("database is locked");
    });
    s.monitor.start();
    await wait(150);
    const report = await s.monitor.report();
    expect(report.components.credentials?.status).toBe("down");
    expect(report.components.credentials?.detail).toContain("database is locked");
    expect(report.status).toBe("down");
  });

  it("SQLite's page check, run while the gateway runs, makes a store damaged under it down", async () => {
    const s = await setup();
    for (let i = 0; i < 30; i++) {
      const id = await s.store.createSession({ title: `session ${i}` });
      await s.store.appendMessage({ session_id: id, role: "user", content: `message ${"x".repeat(200)}` });
    }
    s.monitor.start();
    await verifierOf(s.monitor).once();
    expect((await s.monitor.report()).components.store).toMatchObject({ status: "ok", integrity: "ok" });

    checkpoint(s.paths.state);
    overwritePages(
      s.paths.state,
      btreePages(s.paths.state, "messages").map((p) => p.pageno),
      "garbage",
      7,
    );
    await verifierOf(s.monitor).once();
    const store = (await s.monitor.report()).components.store;
    expect(store?.status).toBe("down");
    expect(store?.integrity).toBe("corrupt");
    expect(store?.detail).toContain("SQLite's page check found damage");
    expect(store?.next).toBe(`tenax sessions recover --source ${s.paths.state} --inspect-only`);
    // The writer heard it too: it stops writing at once, whatever the damaged pages are.
    expect(s.store.health().corrupt?.detail).toMatch(/integrity check failed|is damaged/);
    await expect(s.store.createSession({ title: "after" })).rejects.toMatchObject({ code: "store_corrupt" });
  });

  it("the scheduler component shows the lag of a blocked event loop", async () => {
    const s = await setup();
    s.monitor.start();
    await wait(50);
    const until = Date.now() + 1300;
    while (Date.now() < until) {
      // Block the event loop, as a hung synchronous call would.
    }
    // The scheduler measures the lag when its one-second tick wakes up late.
    const scheduler = (
      await untilValue(
        () => s.monitor.report(),
        (r) => Number(r.components.scheduler?.max_lag_ms ?? 0) > 1000,
        5_000,
        "a lag measured after the block",
      )
    ).components.scheduler;
    expect(scheduler?.max_lag_ms).toBeGreaterThan(1000);
    expect(scheduler?.status).toBe("degraded");
  });
});

/** A SQLite store's monitor always runs the page check. */
function verifierOf(monitor: HealthMonitor): StoreVerifier {
  if (monitor.integrity === null) throw new Error("a monitor of a SQLite store runs the page check");
  return monitor.integrity;
}
