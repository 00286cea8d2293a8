import { describe, expect, it } from "vitest";
import { nextAfter, occurrencesBetween } from "./next.js";
import { parseSchedule } from "./schedule.js";

const T = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const cron = (spec: string, timezone: string) => parseSchedule(spec, { timezone, now: 0 });

describe("nextAfter", () => {
  it("is strictly after t, in the job's time zone", () => {
    const s = cron("0 3 * * *", "Europe/Berlin");
    expect(iso(nextAfter(s, T("2026-06-01T00:00:00Z")))).toBe("2026-06-01T01:00:00.000Z");
    expect(iso(nextAfter(s, T("2026-06-01T01:00:00Z")))).toBe("2026-06-02T01:00:00.000Z");
    expect(iso(nextAfter(cron("0 3 * * *", "America/New_York"), T("2026-06-01T00:00:00Z")))).toBe(
      "2026-06-01T07:00:00.000Z",
    );
    expect(iso(nextAfter(cron("0 3 * * *", "Asia/Kolkata"), T("2026-06-01T00:00:00Z")))).toBe(
      "2026-06-01T21:30:00.000Z",
    );
  });

  it("runs a 02:30 job at 03:00 on the spring-forward day (the time does not exist)", () => {
    expect(iso(nextAfter(cron("30 2 * * *", "Europe/Berlin"), T("2026-03-28T12:00:00Z")))).toBe(
      "2026-03-29T01:00:00.000Z",
    );
    expect(iso(nextAfter(cron("30 2 * * *", "America/New_York"), T("2026-03-07T12:00:00Z")))).toBe(
      "2026-03-08T07:00:00.000Z",
    );
  });

  it("runs a 01:30 job once on the fall-back day, at the first 01:30", () => {
    const ny = cron("30 1 * * *", "America/New_York");
    const runs = occurrencesBetween(ny, T("2026-10-31T12:00:00Z"), T("2026-11-02T12:00:00Z"), 10).map(iso);
    expect(runs).toEqual(["2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]);
    const berlin = cron("30 2 * * *", "Europe/Berlin");
    const b = occurrencesBetween(berlin, T("2026-10-24T12:00:00Z"), T("2026-10-26T12:00:00Z"), 10).map(iso);
    expect(b).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
  });

  it("runs an interval job through the repeated hour both times and skips the missing one", () => {
    const s = cron("30 * * * *", "Europe/Berlin");
    const fall = occurrencesBetween(s, T("2026-10-24T23:00:00Z"), T("2026-10-25T02:00:00Z"), 10).map(iso);
    // 01:30 CEST, 02:30 CEST, then 02:30 again in CET
    expect(fall).toEqual([
      "2026-10-24T23:30:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-25T01:30:00.000Z",
    ]);
    const spring = occurrencesBetween(s, T("2026-03-28T23:00:00Z"), T("2026-03-29T02:00:00Z"), 10).map(iso);
    // 00:30 CET, 01:30 CET, then 03:30 CEST: 02:30 does not exist
    expect(spring).toEqual([
      "2026-03-28T23:30:00.000Z",
      "2026-03-29T00:30:00.000Z",
      "2026-03-29T01:30:00.000Z",
    ]);
  });

  it("steps every N from its anchor, the first one a period after it", () => {
    const s = parseSchedule("every 30m", { timezone: "UTC", now: T("2026-06-01T12:00:00Z") });
    expect(iso(nextAfter(s, T("2026-06-01T11:00:00Z")))).toBe("2026-06-01T12:30:00.000Z");
    expect(iso(nextAfter(s, T("2026-06-01T12:30:00Z")))).toBe("2026-06-01T13:00:00.000Z");
    expect(iso(nextAfter(s, T("2026-06-01T12:31:00Z")))).toBe("2026-06-01T13:00:00.000Z");
  });

  it("gives a one-shot once, then null", () => {
    const s = parseSchedule("in 10m", { timezone: "UTC", now: T("2026-06-01T12:00:00Z") });
    expect(iso(nextAfter(s, T("2026-06-01T12:00:00Z")))).toBe("2026-06-01T12:10:00.000Z");
    expect(nextAfter(s, T("2026-06-01T12:10:00Z"))).toBeNull();
  });
});

describe("occurrencesBetween", () => {
  it("lists (from, to] oldest first, at most limit", () => {
    const s = cron("*/15 * * * *", "UTC");
    const from = T("2026-06-01T12:00:00Z");
    expect(occurrencesBetween(s, from, T("2026-06-01T13:00:00Z"), 100).map(iso)).toEqual([
      "2026-06-01T12:15:00.000Z",
      "2026-06-01T12:30:00.000Z",
      "2026-06-01T12:45:00.000Z",
      "2026-06-01T13:00:00.000Z",
    ]);
    expect(occurrencesBetween(s, from, T("2026-07-01T00:00:00Z"), 3)).toHaveLength(3);
    expect(occurrencesBetween(cron("* * * * *", "UTC"), from, from + 600 * 60_000, 1000)).toHaveLength(600);
  });
});
