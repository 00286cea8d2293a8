// A restarted scheduler: runs that fell due while no scheduler ran are missed runs (a catch-up
// marked missed, or skipped), never runs claimed late, so the downtime does not show as the
// scheduler's lag and the cron component stays ok. Lag is measured only while the scheduler runs.
import { afterEach, describe, expect, it } from "vitest";
import { Scheduler } from "../src/agent/scheduler.js";
import { listRuns } from "../src/cron/records.js";
import { cronComponent } from "../src/health/cron-component.js";
import { cronSetup, MIN, T0 } from "./helpers/cron-engine.js";

const schedulers: Scheduler[] = [];
afterEach(() => {
  for (const s of schedulers.splice(0)) s.stop();
});

describe("cron after a restart", () => {
  it("reports a run that fell due 20 s before the scheduler started as missed, not as 20 s of lag", async () => {
    const t = await cronSetup();
    await t.jobs.create("minutely", { schedule: "every 1m", prompt: "tick" });
    // The gateway was down from before T0+1min until T0+2min+20s: it starts now.
    const restart = T0 + 2 * MIN + 20_000;
    t.set(restart);
    const engine = t.engine();
    const scheduler = new Scheduler({ now: () => restart });
    schedulers.push(scheduler);
    engine.startOn(scheduler);
    const report = await engine.tick();
    await engine.runner.idle();

    // The newest occurrence (20 s ago) runs once as the catch-up, marked missed; the older one is skipped.
    const runs = await listRuns(t.store, "minutely");
    expect(runs.map((r) => [r.occurrence - T0, r.trigger, r.missed, r.state])).toEqual([
      [2 * MIN, "catch_up", true, "ok"],
      [1 * MIN, "schedule", false, "skipped"],
    ]);
    expect(report.claimed.map((r) => r.missed)).toEqual([true]);
    // No lag was measured: nothing was due while the scheduler ran.
    expect(engine.stats().lag_ms).toEqual({ last: 0, max: 0, p99: 0, samples: 0 });
    const component = await cronComponent(t.store, restart + 1_000, engine.stats());
    expect(component.status).toBe("ok");
    expect(component.detail).not.toMatch(/late/);

    // The next occurrence falls due while the scheduler runs: it is due, and its lateness is lag.
    t.set(T0 + 3 * MIN + 40);
    const next = await engine.tick();
    await engine.runner.idle();
    expect(next.claimed.map((r) => [r.occurrence - T0, r.trigger, r.missed])).toEqual([
      [3 * MIN, "schedule", false],
    ]);
    expect(engine.stats().lag_ms).toMatchObject({ last: 40, max: 40, samples: 1 });
    engine.stop();
  });

  it("with catch_up off, the run that fell due during the downtime is skipped as missed, not run late", async () => {
    const t = await cronSetup();
    await t.jobs.create("strict", { schedule: "every 1m", prompt: "tick", catch_up: false });
    const restart = T0 + MIN + 5_000;
    t.set(restart);
    const engine = t.engine();
    const scheduler = new Scheduler({ now: () => restart });
    schedulers.push(scheduler);
    engine.startOn(scheduler);
    const report = await engine.tick();
    expect(report.claimed).toHaveLength(0);
    expect((await listRuns(t.store, "strict")).map((r) => [r.state, r.reason])).toEqual([
      ["skipped", "missed by 5 s; catch_up is off"],
    ]);
    expect(engine.stats().lag_ms.samples).toBe(0);
    engine.stop();
  });

  it("a one-off tick (no scheduler watching) still runs an occurrence a few seconds late as due", async () => {
    const t = await cronSetup();
    await t.jobs.create("ticked", { schedule: "every 1m", prompt: "tick", catch_up: false });
    t.set(T0 + MIN + 5_000);
    const engine = t.engine();
    const report = await engine.tick();
    await engine.runner.idle();
    expect(report.claimed.map((r) => [r.trigger, r.missed])).toEqual([["schedule", false]]);
  });

  it("a job another process added is not late for the time the scheduler had not seen it yet", async () => {
    const t = await cronSetup();
    let now = T0;
    t.set(now);
    const engine = t.engine({ now: () => now });
    const scheduler = new Scheduler({ now: () => now });
    schedulers.push(scheduler);
    engine.startOn(scheduler);
    await engine.tick();
    // Added elsewhere (the CLI) for 2 s from now; this engine only sees it 5 s later.
    await t.jobs.create("soon", { schedule: "in 2s", prompt: "once" });
    now = T0 + 5_000;
    t.set(now);
    await engine.changed();
    const report = await engine.tick();
    await engine.runner.idle();
    expect(report.claimed.map((r) => [r.trigger, r.missed])).toEqual([["schedule", false]]);
    expect(engine.stats().lag_ms).toMatchObject({ max: 0, samples: 1 });
    engine.stop();
  });
});
