// The verifier's pacing, on fake time with the process's real Scheduler: when each slice runs, how
// far apart, what a costly check does to the next one, and what stops it. The checks themselves
// are stand-ins here; test/store-verify.test.ts runs the real ones on real files.
import { describe, expect, it } from "vitest";
import { fakeTimers } from "../../test/helpers/fake-time.js";
import { Scheduler } from "../agent/scheduler.js";
import type { IntegrityResult, IntegrityStatus } from "./integrity.js";
import { StoreVerifier, type VerifyTarget } from "./verifier.js";

interface Call {
  file: "state.db" | "search.db";
  at: number;
}

/**
 * A target whose checks answer at once, each saying it ran `costMs` (a worker's wall time) and,
 * when given, used `cpuMs` of its thread's CPU.
 */
function fakeTarget(now: () => number, costMs = 50, cpuMs?: number) {
  const calls: Call[] = [];
  const answers: { state: IntegrityStatus[]; search: (IntegrityStatus | null)[] } = { state: [], search: [] };
  const result = (status: IntegrityStatus, mode: "quick" | "full"): IntegrityResult => ({
    status,
    mode,
    detail: status === "ok" ? ["ok"] : ["Tree 7 page 12: btreeInitPage() returns error code 11"],
    checked_at: now(),
    duration_ms: costMs,
    ...(cpuMs === undefined ? {} : { cpu_ms: cpuMs }),
  });
  const target: VerifyTarget & { failNext: boolean } = {
    failNext: false,
    checkState: async (mode) => {
      calls.push({ file: "state.db", at: now() });
      if (target.failNext) {
        target.failNext = false;
        throw new Error("no thread for the check");
      }
      return result(answers.state.shift() ?? "ok", mode);
    },
    checkSearch: async () => {
      calls.push({ file: "search.db", at: now() });
      const status = answers.search.length > 0 ? answers.search.shift() : "ok";
      return status === null || status === undefined ? null : result(status, "quick");
    },
  };
  return { target, calls, answers };
}

function setup(everyMs: number, cpuShare: number, costMs = 50, cpuMs?: number) {
  const time = fakeTimers();
  const scheduler = new Scheduler({ now: time.now, timers: time.timers });
  const { target, calls, answers } = fakeTarget(time.now, costMs, cpuMs);
  const verifier = new StoreVerifier({
    target,
    everyMs,
    cpuShare,
    now: time.now,
    wakeAt: (name, at, fn) => scheduler.at(name, at, fn),
  });
  const start = time.now();
  /** Advance fake time in steps, letting each slice's promise settle in between. */
  const run = async (ms: number, stepMs = 1000) => {
    for (let t = 0; t < ms; t += stepMs) {
      time.advance(stepMs);
      for (let i = 0; i < 5; i++) await Promise.resolve();
    }
  };
  const offsets = () => calls.map((c) => `${c.file}@${(c.at - start) / 1000}`);
  return { time, scheduler, target, verifier, calls, answers, run, offsets };
}

describe("the store verifier's pacing", () => {
  it("spreads a whole pass over the interval: state.db, then search.db, one slot each", async () => {
    const s = setup(120_000, 0.01);
    s.verifier.start();
    await s.run(400_000);
    expect(s.offsets()).toEqual([
      "state.db@60",
      "search.db@120",
      "state.db@180",
      "search.db@240",
      "state.db@300",
      "search.db@360",
    ]);
    const last = s.verifier.health().last_pass;
    expect(last).toMatchObject({ state: "ok", search: "ok", busy_ms: 100 });
    expect(s.verifier.health().next_at).toBe((s.calls[0]?.at ?? 0) + 360_000);
  });

  it("waits longer after a costly check, so the checks never take more than their share of a core", async () => {
    // Each check runs 3 s; at 1% of a core the next may start 300 s after, not 60 s.
    const s = setup(120_000, 0.01, 3000);
    s.verifier.start();
    await s.run(2_000_000);
    const starts = s.calls.map((c) => c.at);
    for (let i = 1; i < starts.length; i++) expect((starts[i] ?? 0) - (starts[i - 1] ?? 0)).toBe(300_000);
    const busy = s.calls.length * 3000;
    const elapsed = (starts.at(-1) ?? 0) + 300_000 - (starts[0] ?? 0);
    expect(busy / elapsed).toBeLessThanOrEqual(0.01);
  });

  it("paces by a check's CPU time where known: on a busy machine a check is long, not costly", async () => {
    // 3 s long, 300 ms of CPU: at 1% the next may start 30 s after, so the 60 s slots hold.
    const s = setup(120_000, 0.01, 3000, 300);
    s.verifier.start();
    await s.run(250_000);
    expect(s.offsets()).toEqual(["state.db@60", "search.db@120", "state.db@180", "search.db@240"]);
    expect(s.verifier.health().last_pass?.busy_ms).toBe(600);
  });

  it("stops for good once state.db is damaged; damage in search.db only moves on", async () => {
    const s = setup(10_000, 0.5);
    s.answers.search.push("corrupt");
    s.answers.state.push("ok", "corrupt");
    s.verifier.start();
    await s.run(100_000);
    expect(s.offsets()).toEqual(["state.db@5", "search.db@10", "state.db@15"]);
    expect(s.verifier.health()).toMatchObject({ next_at: null, found: { status: "corrupt" } });
    expect(s.scheduler.size).toBe(0);
    s.verifier.start();
    await s.run(50_000);
    expect(s.calls).toHaveLength(3);
  });

  it("a check that cannot start is tried again at the next slot; an index not in use is skipped", async () => {
    const s = setup(10_000, 0.5);
    s.target.failNext = true;
    s.answers.search.push(null);
    s.verifier.start();
    await s.run(30_000);
    expect(s.offsets()).toEqual([
      "state.db@5",
      "search.db@10",
      "state.db@15",
      "search.db@20",
      "state.db@25",
      "search.db@30",
    ]);
    expect(s.verifier.health().last_pass).toMatchObject({ state: "ok", search: "ok" });
  });

  it("once() runs a whole pass at once, between the scheduled slices; stop() ends them", async () => {
    const s = setup(10_000, 0.5);
    s.verifier.start();
    const pass = await s.verifier.once();
    expect(pass).toMatchObject({ state: "ok", search: "ok" });
    expect(s.offsets()).toEqual(["state.db@0", "search.db@0"]);
    await s.run(5000);
    expect(s.calls).toHaveLength(3);
    s.verifier.stop();
    await s.run(50_000);
    expect(s.calls).toHaveLength(3);
    expect(s.time.pending).toBe(0);
  });

  it("an interval of 0 never starts", async () => {
    const s = setup(0, 0.01);
    s.verifier.start();
    await s.run(100_000);
    expect(s.calls).toHaveLength(0);
    expect(s.scheduler.size).toBe(0);
  });
});
