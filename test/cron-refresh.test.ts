// When the cron engine reloads its job definitions: after a job changed, not after a claim. A
// claim writes the job's slot; reloading every definition then made each wake-up after a claim as
// late as a read of all jobs (about 200 ms with 10,000, bench/cron.ts). A slot another process
// moved is still honoured: the claim reads it afresh.
import { describe, expect, it, vi } from "vitest";
import { Scheduler } from "../src/agent/scheduler.js";
import { JOB_KIND, listRuns } from "../src/cron/records.js";
import { cronSetup, MIN, T0 } from "./helpers/cron-engine.js";

const setup = cronSetup;

describe("cron engine refresh", () => {
  it("does not read the jobs again after its own claim, and after a change reads only the changed job", async () => {
    const t = await setup();
    await t.jobs.create("a", { schedule: "every 1m", prompt: "a" });
    await t.jobs.create("b", { schedule: "every 1m", prompt: "b" });
    const engine = t.engine();
    t.set(T0 + MIN + 1_000);
    expect((await engine.tick()).claimed).toHaveLength(2);
    await engine.runner.idle();
    const lists = vi.spyOn(t.store, "listRecords");
    const reads = vi.spyOn(t.store, "getRecord");
    const jobReads = () => reads.mock.calls.filter(([kind]) => kind === JOB_KIND).map(([, key]) => key);
    t.set(T0 + 2 * MIN + 1_000);
    expect((await engine.tick()).claimed).toHaveLength(2);
    await engine.runner.idle();
    expect(jobReads()).toEqual([]);
    await t.jobs.update("a", { prompt: "a, changed" });
    reads.mockClear();
    t.set(T0 + 3 * MIN + 1_000);
    const report = await engine.tick();
    // Only the changed definition was read, and no listing of every job.
    expect(jobReads()).toEqual(["a"]);
    expect(lists.mock.calls.filter(([kind]) => kind === JOB_KIND)).toEqual([]);
    await engine.runner.idle();
    // The claim after the change runs the new definition.
    expect(report.claimed.map((r) => r.job).sort()).toEqual(["a", "b"]);
    expect((await listRuns(t.store, "a"))[0]?.reply).toContain("a, changed");
    // A job removed elsewhere is forgotten on the next look.
    await t.jobs.remove("b");
    t.set(T0 + 4 * MIN + 1_000);
    expect((await engine.tick()).claimed.map((r) => r.job)).toEqual(["a"]);
    expect(engine.stats().jobs).toBe(1);
    await engine.runner.idle();
    lists.mockRestore();
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
    expect((await listRuns(t.store, "shared")).map((r) => [r.occurrence - T0, r.state])).toEqual([
      [2 * MIN, "ok"],
      [MIN, "ok"],
    ]);
  });

  it("the first load on startOn reads the jobs in slices, yielding between them, and the tick waits for it", async () => {
    const t = await setup();
    const count = 600;
    for (let i = 0; i < count; i += 100)
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          t.jobs.create(`job-${i + j}`, { schedule: "every 1m", prompt: "p" }),
        ),
      );
    t.set(T0 + MIN + 1_000);
    const engine = t.engine();
    const scheduler = new Scheduler();
    // What the loop did while the engine loaded: an immediate queued before startOn ran in between.
    let seenWhileLoading = -1;
    setImmediate(() => {
      seenWhileLoading = engine.stats().jobs;
    });
    engine.startOn(scheduler);
    expect(engine.stats().jobs).toBeLessThan(count);
    const report = await engine.tick();
    expect(seenWhileLoading).toBeGreaterThan(0);
    expect(seenWhileLoading).toBeLessThan(count);
    expect(engine.stats().jobs).toBe(count);
    // The wake-up tick of startOn and this one shared the pass: every job due was claimed once.
    expect(report.claimed).toHaveLength(count);
    engine.stop();
    scheduler.stop();
    await engine.runner.idle();
  });
});
