// The cron engine in one process, on a real store and a real agent over the simulator, with an
// injected clock: what a tick claims, runs, skips and catches up, and that two engines ticking at
// the same moment claim an occurrence once.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listOutbox } from "../src/cron/delivery.js";
import { finishOps } from "../src/cron/finish.js";
import { listRuns, putOp, RUN_KIND, readSlot } from "../src/cron/records.js";
import { cronSetup, HOUR, MIN, T0 } from "./helpers/cron-engine.js";

const setup = cronSetup;

describe("cron engine", () => {
  it("claims a due occurrence once, runs it in a fresh cron session and records the reply", async () => {
    const t = await setup();
    await t.jobs.create("hourly", { schedule: "every 1h", prompt: "say the hour" });
    const engine = t.engine();
    t.set(T0 + 30 * MIN);
    expect((await engine.tick()).claimed).toHaveLength(0);
    t.set(T0 + HOUR + 5_000);
    const report = await engine.tick();
    expect(report.claimed).toHaveLength(1);
    await engine.runner.idle();
    const [run] = await listRuns(t.store, "hourly");
    expect(run?.state).toBe("ok");
    expect(run?.occurrence).toBe(T0 + HOUR);
    expect(run?.reply).toContain("say the hour");
    const session = await t.store.getSession(run?.session_id ?? "");
    expect(session?.source).toBe("cron");
    expect(session?.title).toBe("cron: hourly");
    // The slot moved past the occurrence: ticking again claims nothing.
    expect((await readSlot(t.store, "hourly"))?.slot).toBe(T0 + HOUR);
    expect((await engine.tick()).claimed).toHaveLength(0);
    expect(engine.stats().lag_ms.max).toBeGreaterThanOrEqual(5_000);
  });

  it("after downtime runs one catch-up marked missed and records the older occurrences as skipped", async () => {
    const t = await setup();
    await t.jobs.create("report", { schedule: "every 1h", prompt: "report" });
    const engine = t.engine();
    t.set(T0 + 3 * HOUR + 10 * MIN);
    const report = await engine.tick();
    await engine.runner.idle();
    expect(report.claimed.map((r) => r.missed)).toEqual([true]);
    const runs = await listRuns(t.store, "report");
    expect(runs.map((r) => [r.occurrence - T0, r.state, r.missed])).toEqual([
      [3 * HOUR, "ok", true],
      [2 * HOUR, "skipped", false],
      [1 * HOUR, "skipped", false],
    ]);
    expect(runs[1]?.reason).toMatch(/missed by 70 min/);
  });

  it("with catch_up off records every missed occurrence as skipped and runs nothing", async () => {
    const t = await setup();
    await t.jobs.create("strict", { schedule: "every 1h", prompt: "x", catch_up: false });
    const engine = t.engine();
    t.set(T0 + 2 * HOUR + 10 * MIN);
    const report = await engine.tick();
    expect(report.claimed).toHaveLength(0);
    expect((await listRuns(t.store, "strict")).map((r) => [r.state, r.reason])).toEqual([
      ["skipped", expect.stringMatching(/catch_up is off/)],
      ["skipped", expect.stringMatching(/catch_up is off/)],
    ]);
  });

  it("two engines ticking at the same moment claim the occurrence once", async () => {
    const t = await setup();
    for (let i = 0; i < 20; i++) await t.jobs.create(`job-${i}`, { schedule: "every 1m", prompt: `p${i}` });
    const a = t.engine();
    const b = t.engine();
    t.set(T0 + MIN + 1_000);
    const [ra, rb] = await Promise.all([a.tick(), b.tick()]);
    expect(ra.claimed.length + rb.claimed.length).toBe(20);
    expect(ra.conflicts + rb.conflicts).toBe(20);
    await Promise.all([a.runner.idle(), b.runner.idle()]);
    const runs = await listRuns(t.store);
    expect(runs).toHaveLength(20);
    expect(new Set(runs.map((r) => r.job)).size).toBe(20);
    expect(runs.every((r) => r.state === "ok")).toBe(true);
  });

  it("a manual run does not move the schedule", async () => {
    const t = await setup();
    await t.jobs.create("m", { schedule: "every 1h", prompt: "now" });
    const engine = t.engine();
    t.set(T0 + 10 * MIN);
    const run = await engine.runNow("m");
    expect(run.trigger).toBe("manual");
    await engine.runner.idle();
    expect((await listRuns(t.store, "m"))[0]?.state).toBe("ok");
    t.set(T0 + HOUR + 1_000);
    expect((await engine.tick()).claimed).toHaveLength(1);
  });

  it("a pause is recorded as one skipped record on resume, and the job goes on from then", async () => {
    const t = await setup();
    await t.jobs.create("p", { schedule: "every 1h", prompt: "x" });
    const engine = t.engine();
    t.set(T0 + 10 * MIN);
    await t.jobs.pause("p");
    t.set(T0 + 3 * HOUR + 20 * MIN);
    expect((await engine.tick()).claimed).toHaveLength(0);
    const resumed = await t.jobs.resume("p");
    expect(resumed.next_due_at).toBe(T0 + 4 * HOUR);
    const [paused] = await listRuns(t.store, "p");
    expect([paused?.state, paused?.count, paused?.reason]).toEqual([
      "skipped",
      3,
      expect.stringMatching(/paused/),
    ]);
    expect((await engine.tick()).claimed).toHaveLength(0);
    t.set(T0 + 4 * HOUR + 1_000);
    expect((await engine.tick()).claimed).toHaveLength(1);
    await engine.runner.idle();
  });

  it("a run past its job's timeout is interrupted and fails with code timeout", async () => {
    const t = await setup();
    t.sim.script([{ type: "hang", phase: "before_headers" }]);
    const engine = t.engine();
    await t.jobs.create("slow", { schedule: "every 1h", prompt: "wait", timeout_s: 1 });
    const run = await engine.runNow("slow");
    await engine.runner.idle();
    const ended = (await listRuns(t.store, "slow")).find((r) => r.run_key === run.run_key);
    expect([ended?.state, ended?.error_code]).toEqual(["failed", "timeout"]);
    expect(ended?.error).toMatch(/timeout of 1 s/);
    expect((await t.store.getTurns(ended?.session_id ?? ""))[0]?.status).not.toBe("running");
  });

  it("a queued claim whose owner died is taken over and run once; a live owner's is left alone", async () => {
    const t = await setup();
    await t.jobs.create("j", { schedule: "every 1h", prompt: "go" });
    // A process claims the occurrence and dies before starting it (its runner never pumps).
    const dying = t.engine({ maxConcurrent: 0, now: () => T0 + HOUR + 1_000 });
    t.set(T0 + HOUR + 1_000);
    expect((await dying.tick()).claimed).toHaveLength(1);
    expect((await listRuns(t.store, "j"))[0]?.state).toBe("queued");
    // The claim's owner is another process (this one's own claims are never taken over).
    const claimed = (await listRuns(t.store, "j"))[0];
    await t.store.write([
      putOp(RUN_KIND, claimed?.run_key ?? "", { ...claimed, owner: "pid:999999@1" }, T0 + HOUR + 2_500),
    ]);
    const alive = t.engine({ now: () => T0 + HOUR + 2_000, ownerAlive: () => true });
    // While its owner runs, its claim is left alone.
    expect((await alive.runner.recover({ settleInterrupted: true })).taken).toHaveLength(0);
    const next = t.engine({ now: () => T0 + HOUR + 3_000, ownerAlive: () => false });
    const recovered = await next.runner.recover({ settleInterrupted: true });
    expect(recovered.taken).toHaveLength(1);
    await next.runner.idle();
    const runs = await listRuns(t.store, "j");
    expect(runs.map((r) => r.state)).toEqual(["ok"]);
    expect(t.sim.requests()).toHaveLength(1);
  });

  it("a reply that is exactly [SILENT] is recorded and not delivered; another reply is queued for its target", async () => {
    const t = await setup();
    t.sim.script([
      { type: "reply", text: " [SILENT] " },
      { type: "reply", text: "worth telling" },
    ]);
    await t.jobs.create("quiet", { schedule: "every 1h", prompt: "check" });
    const engine = t.engine({ maxConcurrent: 1, now: Date.now, finishOps: finishOps(t.store) });
    const silent = await engine.runNow("quiet");
    await engine.runner.idle();
    const spoken = await engine.runNow("quiet");
    await engine.runner.idle();
    const runs = await listRuns(t.store, "quiet");
    const byKey = new Map(runs.map((r) => [r.run_key, r]));
    expect([byKey.get(silent.run_key)?.state, byKey.get(silent.run_key)?.silent]).toEqual(["ok", true]);
    expect(byKey.get(spoken.run_key)?.silent).toBe(false);
    expect((await listOutbox(t.store)).map((e) => [e.run_key, e.what, e.target])).toEqual([
      [spoken.run_key, "result", "local"],
    ]);
  });

  it("a run is unattended: a command the exec policy holds back is denied at once, not waited on", async () => {
    const t = await setup({ tools: { exec: { mode: "ask" } } });
    const marker = join(t.project, "made-by-cron");
    t.sim.script([
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: `touch ${marker}` } }] },
      { type: "reply", text: "could not" },
    ]);
    await t.jobs.create("careful", { schedule: "every 1h", prompt: "make the file", dir: t.project });
    const engine = t.engine();
    const run = await engine.runNow("careful");
    await engine.runner.idle();
    const ended = (await listRuns(t.store, "careful")).find((r) => r.run_key === run.run_key);
    expect(ended?.state).toBe("ok");
    expect(existsSync(marker)).toBe(false);
    const said = (await t.store.getMessages(ended?.session_id ?? "")).map((m) => m.content ?? "").join("\n");
    expect(said).toContain("denied at once");
  });
});
