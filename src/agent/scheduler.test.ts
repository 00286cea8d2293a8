import { afterEach, describe, expect, it } from "vitest";
import { type FakeTimers, fakeTimers } from "../../test/helpers/fake-time.js";
import { Scheduler } from "./scheduler.js";

const schedulers: Scheduler[] = [];
afterEach(() => {
  for (const s of schedulers.splice(0)) s.stop();
});

function make(onError?: (job: string, error: unknown) => void): Scheduler {
  const s = new Scheduler(onError ? { onError } : {});
  schedulers.push(s);
  return s;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A scheduler on fake time: exact counts, whatever the machine's load. */
function onFakeTime(time: FakeTimers, onError?: (job: string, error: unknown) => void): Scheduler {
  const s = new Scheduler({ now: time.now, timers: time.timers, ...(onError ? { onError } : {}) });
  schedulers.push(s);
  return s;
}

/** `count` steps of `ms`, each followed by the ends of the runs it started (a job is rescheduled when it ends). */
async function step(time: FakeTimers, ms: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    time.advance(ms);
    await new Promise((r) => setImmediate(r));
  }
}

describe("Scheduler", () => {
  it("runs on the timers it is given: an hour of jobs on fake time, one timer armed at a time", async () => {
    const time = fakeTimers();
    const s = new Scheduler({ now: time.now, timers: time.timers });
    schedulers.push(s);
    const runs: string[] = [];
    s.every("minutely", 60_000, () => void runs.push(`every@${(time.now() - time.start) / 1000}`));
    s.at("once", time.start + 90_000, () => void runs.push(`at@${(time.now() - time.start) / 1000}`));
    expect(time.pending).toBe(1);
    time.advance(59_999);
    expect(runs).toEqual([]);
    time.advance(1);
    await Promise.resolve();
    time.advance(60_000);
    await Promise.resolve();
    expect(runs).toEqual(["every@60", "at@90", "every@120"]);
    expect(time.pending).toBe(1);
    s.stop();
    expect(time.pending).toBe(0);
  });

  it("runs many jobs on one timer, each at its own period", async () => {
    const time = fakeTimers();
    const s = onFakeTime(time);
    const runs = { fast: 0, slow: 0 };
    for (let i = 0; i < 100; i++) s.every(`fast-${i}`, 10, () => void runs.fast++);
    s.every("slow", 60, () => void runs.slow++);
    expect(s.size).toBe(101);
    await step(time, 10, 13);
    expect(time.pending).toBe(1);
    expect(runs.fast).toBe(100 * 13);
    expect(runs.slow).toBe(2);
  });

  it("a job that throws is reported and rescheduled; one that returns false stops", async () => {
    const errors: string[] = [];
    const time = fakeTimers();
    const s = onFakeTime(time, (job, error) => errors.push(`${job}: ${(error as Error).message}`));
    let thrown = 0;
    let counted = 0;
    s.every("flaky", 10, () => {
      thrown++;
      throw new Error("boom");
    });
    s.every("three-times", 10, () => ++counted < 3);
    await step(time, 10, 12);
    expect(thrown).toBe(12);
    expect(errors).toHaveLength(12);
    expect(errors[0]).toBe("flaky: boom");
    expect(counted).toBe(3);
    expect(s.size).toBe(1);
  });

  it("cancel and stop leave no timer armed", async () => {
    const s = make();
    let runs = 0;
    const job = s.every("x", 10, () => void runs++);
    job.cancel();
    expect(s.armed).toBe(false);
    await wait(40);
    expect(runs).toBe(0);
    s.every("y", 10, () => true);
    expect(s.armed).toBe(true);
    s.stop();
    expect(s.armed).toBe(false);
    expect(() => s.every("z", 10, () => true)).toThrow(/stopped/);
  });

  it("a sooner job added and cancelled leaves its timer, which wakes early and arms for what is due", async () => {
    const time = fakeTimers();
    let set = 0;
    const counted = {
      set: (fn: () => void, ms: number) => {
        set++;
        return time.timers.set(fn, ms);
      },
      clear: time.timers.clear,
    };
    const s = new Scheduler({ now: time.now, timers: counted });
    schedulers.push(s);
    const runs: number[] = [];
    s.every("minutely", 60_000, () => void runs.push((time.now() - time.start) / 1000));
    expect(set).toBe(1);
    // A turn's heartbeat: sooner than everything else, then cancelled when the turn ends.
    s.every("heartbeat", 10_000, () => true).cancel();
    expect(set).toBe(2);
    // More turns add and cancel theirs: the one timer, armed for as soon, stays as it is.
    for (let i = 0; i < 5; i++) s.every(`heartbeat-${i}`, 10_000, () => true).cancel();
    expect(set).toBe(2);
    expect(time.pending).toBe(1);
    // It wakes at 10 s to nothing due, and arms for the minute.
    await step(time, 10_000, 1);
    expect(runs).toEqual([]);
    expect(time.pending).toBe(1);
    await step(time, 10_000, 5);
    expect(runs).toEqual([60]);
    expect(time.pending).toBe(1);
  });

  it("never overlaps a slow async job with itself", async () => {
    const s = make();
    let active = 0;
    let most = 0;
    s.every("slow", 5, async () => {
      active++;
      most = Math.max(most, active);
      await wait(30);
      active--;
    });
    await wait(120);
    expect(most).toBe(1);
  });

  it("at() runs a job once at its time on the same timer, and can be cancelled", async () => {
    const s = new Scheduler();
    const ran: string[] = [];
    s.at("soon", Date.now() + 20, () => ran.push("soon"));
    const later = s.at("later", Date.now() + 40, () => ran.push("later"));
    later.cancel();
    await wait(80);
    expect(ran).toEqual(["soon"]);
    expect(s.size).toBe(0);
    expect(s.armed).toBe(false);
    s.stop();
  });
});
