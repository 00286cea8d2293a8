// When the cron engine reloads its job definitions: after a job changed, not after a claim. A
// claim writes the job's slot; reloading every definition then made each wake-up after a claim as
// late as a read of all jobs (about 200 ms with 10,000, bench/cron.ts). A slot another process
// moved is still honoured: the claim reads it afresh.
import { describe, expect, it, vi } from "vitest";
import { agentCronHost } from "../src/cron/agent-host.js";
import { CronEngine } from "../src/cron/engine.js";
import { CronJobs } from "../src/cron/jobs.js";
import { JOB_KIND, listRuns } from "../src/cron/records.js";
import { setupAgent } from "./helpers/agent.js";

const T0 = Date.parse("2026-12-01T00:00:30Z");
const MIN = 60_000;

async function setup() {
  const ctx = await setupAgent();
  let now = T0;
  const clock = () => now;
  const jobs = new CronJobs(ctx.store, { timezone: "UTC", now: clock });
  const engine = () =>
    new CronEngine({
      store: ctx.store,
      host: agentCronHost(ctx.agent, ctx.project),
      maxConcurrent: 2,
      defaultTimeoutS: 60,
      sessionOp: (title) => ctx.agent.newSessionOp({ title, source: "cron" }),
      now: clock,
    });
  return { ...ctx, jobs, engine, set: (t: number) => (now = t) };
}

describe("cron engine refresh", () => {
  it("does not read every job again after its own claim, but does after a job changed", async () => {
    const t = await setup();
    await t.jobs.create("a", { schedule: "every 1m", prompt: "a" });
    await t.jobs.create("b", { schedule: "every 1m", prompt: "b" });
    const engine = t.engine();
    t.set(T0 + MIN + 1_000);
    expect((await engine.tick()).claimed).toHaveLength(2);
    await engine.runner.idle();
    const reads = vi.spyOn(t.store, "listRecords");
    const jobReads = () => reads.mock.calls.filter(([kind]) => kind === JOB_KIND).length;
    t.set(T0 + 2 * MIN + 1_000);
    expect((await engine.tick()).claimed).toHaveLength(2);
    await engine.runner.idle();
    expect(jobReads()).toBe(0);
    await t.jobs.update("a", { prompt: "a, changed" });
    t.set(T0 + 3 * MIN + 1_000);
    const report = await engine.tick();
    expect(jobReads()).toBe(1);
    await engine.runner.idle();
    // The claim after the change runs the new definition.
    expect(report.claimed.map((r) => r.job).sort()).toEqual(["a", "b"]);
    expect(listRuns(t.store, "a")[0]?.reply).toContain("a, changed");
    reads.mockRestore();
  });

  it("an occurrence another engine claimed first is not run again, and the next one is", async () => {
    const t = await setup();
    await t.jobs.create("shared", { schedule: "every 1m", prompt: "s" });
    const first = t.engine();
    const second = t.engine();
    // Both have loaded the job (a tick before anything is due).
    expect((await first.tick()).claimed).toHaveLength(0);
    expect((await second.tick()).claimed).toHaveLength(0);
    t.set(T0 + MIN + 1_000);
    expect((await first.tick()).claimed).toHaveLength(1);
    await first.runner.idle();
    // The second's next due time is still the one claimed: its claim reads the slot and stands down.
    expect(second.stats().next_due_at).toBe(T0 + MIN);
    const late = await second.tick();
    expect([late.claimed.length, late.conflicts]).toEqual([0, 0]);
    expect(second.stats().next_due_at).toBe(T0 + 2 * MIN);
    t.set(T0 + 2 * MIN + 1_000);
    expect((await second.tick()).claimed).toHaveLength(1);
    await second.runner.idle();
    expect(listRuns(t.store, "shared").map((r) => [r.occurrence - T0, r.state])).toEqual([
      [2 * MIN, "ok"],
      [MIN, "ok"],
    ]);
  });
});
