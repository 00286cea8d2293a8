import { describe, expect, it } from "vitest";
import { COUNT_CAP, GRACE_MAX_MS, GRACE_MIN_MS, graceFor, LISTED_MAX, planMissed } from "./missed.js";
import { parseSchedule } from "./schedule.js";

const T = (iso: string) => Date.parse(iso);
const H = 3_600_000;
const M = 60_000;
const cron = (spec: string) => parseSchedule(spec, { timezone: "UTC", now: 0 });

describe("graceFor", () => {
  it("is half the period, clamped to 2 minutes .. 2 hours", () => {
    expect(graceFor(cron("* * * * *"), T("2026-06-01T12:00:00Z"))).toBe(GRACE_MIN_MS);
    expect(graceFor(cron("0 * * * *"), T("2026-06-01T12:00:00Z"))).toBe(30 * M);
    expect(graceFor(cron("0 3 * * *"), T("2026-06-01T03:00:00Z"))).toBe(GRACE_MAX_MS);
    expect(graceFor(parseSchedule("every 1h", { timezone: "UTC", now: 0 }), 0)).toBe(30 * M);
    expect(graceFor(parseSchedule("in 1m", { timezone: "UTC", now: 0 }), 0)).toBe(2 * H);
  });

  it("takes the gap after that occurrence for an uneven cron expression", () => {
    const s = cron("0 9,17 * * *");
    expect(graceFor(s, T("2026-06-01T09:00:00Z"))).toBe(2 * H); // 8 h gap
    const t = cron("0,10 12 * * *");
    expect(graceFor(t, T("2026-06-01T12:00:00Z"))).toBe(5 * M); // 10 min gap
  });
});

describe("planMissed", () => {
  it("collapses missed occurrences within the grace window into one catch-up, the newest", () => {
    const s = cron("0 * * * *");
    const plan = planMissed(s, {
      since: T("2026-06-01T09:00:00Z"),
      now: T("2026-06-01T12:20:00Z"),
      catchUp: true,
    });
    expect(plan.due).toBeNull();
    expect(plan.catchUp).toBe(T("2026-06-01T12:00:00Z"));
    expect(plan.skipped).toEqual([
      { at: T("2026-06-01T10:00:00Z"), count: 1, reason: "missed by 2.3 h, beyond the 30 min grace window" },
      { at: T("2026-06-01T11:00:00Z"), count: 1, reason: "missed by 80 min, beyond the 30 min grace window" },
    ]);
    expect(plan.next).toBe(T("2026-06-01T13:00:00Z"));
  });

  it("skips everything beyond the grace window with the reason", () => {
    const s = cron("0 3 * * *");
    const plan = planMissed(s, {
      since: T("2026-06-01T04:00:00Z"),
      now: T("2026-06-02T08:00:00Z"),
      catchUp: true,
    });
    expect(plan.catchUp).toBeNull();
    expect(plan.skipped).toEqual([
      { at: T("2026-06-02T03:00:00Z"), count: 1, reason: "missed by 5 h, beyond the 2 h grace window" },
    ]);
  });

  it("with catch_up off records every missed one as skipped", () => {
    const s = cron("0 * * * *");
    const plan = planMissed(s, {
      since: T("2026-06-01T10:30:00Z"),
      now: T("2026-06-01T12:20:00Z"),
      catchUp: false,
    });
    expect(plan.catchUp).toBeNull();
    expect(plan.skipped.map((x) => x.reason)).toEqual([
      "missed by 80 min; catch_up is off",
      "missed by 20 min; catch_up is off",
    ]);
  });

  it("runs an occurrence a tick late as due, not missed, and the older ones within grace stand behind it", () => {
    const s = cron("*/5 * * * *");
    const plan = planMissed(s, {
      since: T("2026-06-01T11:53:00Z"),
      now: T("2026-06-01T12:00:30Z"),
      catchUp: true,
    });
    expect(plan.due).toBe(T("2026-06-01T12:00:00Z"));
    expect(plan.catchUp).toBeNull();
    expect(plan.skipped).toEqual([
      {
        at: T("2026-06-01T11:55:00Z"),
        count: 1,
        reason: "missed by 5.5 min, beyond the 2.5 min grace window",
      },
    ]);
  });

  it("takes an occurrence from before the scheduler began watching as missed, however recent", () => {
    const s = cron("*/5 * * * *");
    const input = { since: T("2026-06-01T11:58:00Z"), now: T("2026-06-01T12:00:30Z"), catchUp: true };
    // The gateway started at 12:00:20: the 12:00 occurrence fell due while no scheduler ran.
    const restarted = planMissed(s, { ...input, watchedSince: T("2026-06-01T12:00:20Z") });
    expect(restarted).toMatchObject({ due: null, catchUp: T("2026-06-01T12:00:00Z"), skipped: [] });
    // Watching since before it: a wake 30 s late is due (and its lateness is the scheduler's lag).
    const watching = planMissed(s, { ...input, watchedSince: T("2026-06-01T11:00:00Z") });
    expect(watching).toMatchObject({ due: T("2026-06-01T12:00:00Z"), catchUp: null });
    const strict = planMissed(s, { ...input, catchUp: false, watchedSince: T("2026-06-01T12:00:20Z") });
    expect(strict.due).toBeNull();
    expect(strict.skipped).toEqual([
      { at: T("2026-06-01T12:00:00Z"), count: 1, reason: "missed by 30 s; catch_up is off" },
    ]);
  });

  it("catches up a one-shot missed within 2 hours and skips one missed longer", () => {
    const s = parseSchedule("2026-06-01T08:00:00Z", { timezone: "UTC", now: T("2026-06-01T07:00:00Z") });
    expect(
      planMissed(s, { since: T("2026-06-01T07:00:00Z"), now: T("2026-06-01T09:00:00Z"), catchUp: true }),
    ).toEqual({
      due: null,
      catchUp: T("2026-06-01T08:00:00Z"),
      skipped: [],
      next: null,
    });
    const late = planMissed(s, {
      since: T("2026-06-01T07:00:00Z"),
      now: T("2026-06-01T11:00:00Z"),
      catchUp: true,
    });
    expect(late.catchUp).toBeNull();
    expect(late.skipped).toEqual([
      { at: T("2026-06-01T08:00:00Z"), count: 1, reason: "missed by 3 h, beyond the 2 h grace window" },
    ]);
  });

  it("a one-shot created already past runs within grace of its time", () => {
    const created = T("2026-06-01T08:30:00Z");
    const s = parseSchedule("2026-06-01T08:00:00Z", { timezone: "UTC", now: created });
    expect(s).toMatchObject({ past: true });
    // Owed from before its instant: the store passes the instant less one ms as the claim mark.
    const plan = planMissed(s, { since: s.kind === "once" ? s.at - 1 : 0, now: created, catchUp: true });
    expect(plan.catchUp).toBe(T("2026-06-01T08:00:00Z"));
  });

  it("bounds the work after a long downtime: the newest listed, the rest one entry with a count", () => {
    const s = cron("* * * * *");
    const since = T("2025-06-01T00:00:00Z");
    const now = T("2026-06-01T00:00:30Z");
    const started = performance.now();
    const plan = planMissed(s, { since, now, catchUp: true });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(plan.due).toBe(T("2026-06-01T00:00:00Z"));
    expect(plan.skipped).toHaveLength(LISTED_MAX); // one summary and LISTED_MAX - 1 listed
    const [summary] = plan.skipped;
    expect(summary).toMatchObject({ at: T("2025-06-01T00:01:00Z"), count: COUNT_CAP, more: true });
    expect(summary?.reason).toBe(`${COUNT_CAP} or more occurrences missed by more than the grace window`);

    const every = parseSchedule("every 1m", { timezone: "UTC", now: since });
    const p2 = planMissed(every, { since, now, catchUp: false });
    const total = 365 * 24 * 60;
    expect(p2.skipped[0]).toMatchObject({
      count: total - LISTED_MAX,
      reason: `${total - LISTED_MAX} occurrences missed; catch_up is off`,
    });
    expect(p2.due).toBe(T("2026-06-01T00:00:00Z"));
    expect(p2.skipped.reduce((n, x) => n + x.count, 0) + 1).toBe(total);
  });

  it("has nothing to say when nothing was missed", () => {
    const s = cron("0 3 * * *");
    const plan = planMissed(s, {
      since: T("2026-06-01T03:00:00Z"),
      now: T("2026-06-01T12:00:00Z"),
      catchUp: true,
    });
    expect(plan).toEqual({ due: null, catchUp: null, skipped: [], next: T("2026-06-02T03:00:00Z") });
  });
});
