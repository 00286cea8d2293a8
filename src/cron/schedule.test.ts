import { describe, expect, it } from "vitest";
import { TenaxError } from "../core/errors.js";
import { parseSchedule } from "./schedule.js";

const now = Date.parse("2026-06-01T12:00:00Z");
const opts = { timezone: "Europe/Berlin", now };

function errorOf(spec: string, timezone = "Europe/Berlin"): string {
  try {
    parseSchedule(spec, { timezone, now });
  } catch (error) {
    expect(TenaxError.isInstance(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error(`"${spec}" parsed`);
}

describe("parseSchedule", () => {
  it("takes a 5-field cron expression in the job's time zone, as plain JSON data", () => {
    const s = parseSchedule("0 3 * * *", opts);
    expect(s).toEqual({
      kind: "cron",
      spec: "0 3 * * *",
      expression: "0 3 * * *",
      timezone: "Europe/Berlin",
    });
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it("takes a TZ= prefix that overrides the job's zone", () => {
    const s = parseSchedule("TZ=Asia/Kolkata 30 9 * * 1-5", opts);
    expect(s).toMatchObject({ kind: "cron", expression: "30 9 * * 1-5", timezone: "Asia/Kolkata" });
  });

  it("takes every N with the anchor at parse time", () => {
    expect(parseSchedule("every 30m", opts)).toEqual({
      kind: "every",
      spec: "every 30m",
      period_ms: 1_800_000,
      anchor: now,
      timezone: "Europe/Berlin",
    });
    expect(parseSchedule("every 2h", opts)).toMatchObject({ period_ms: 7_200_000 });
    expect(parseSchedule("every 1d", opts)).toMatchObject({ period_ms: 86_400_000 });
    expect(parseSchedule("every 90s", opts)).toMatchObject({ period_ms: 90_000 });
  });

  it("fixes in N to an instant at parse time", () => {
    expect(parseSchedule("in 10s", opts)).toMatchObject({ kind: "once", at: now + 10_000, past: false });
    expect(parseSchedule("in 30m", opts)).toMatchObject({ at: now + 1_800_000 });
    expect(parseSchedule("in 2h", opts)).toMatchObject({ at: now + 7_200_000 });
  });

  it("takes an ISO time with a zone, or without one in the job's zone", () => {
    expect(parseSchedule("2026-12-24T08:00:00Z", opts)).toMatchObject({
      kind: "once",
      at: Date.parse("2026-12-24T08:00:00Z"),
      past: false,
    });
    // 08:00 in Berlin in winter is 07:00 UTC; in New York it is 13:00 UTC.
    expect(parseSchedule("2026-12-24T08:00:00", opts)).toMatchObject({
      at: Date.parse("2026-12-24T07:00:00Z"),
    });
    expect(parseSchedule("2026-12-24T08:00", { timezone: "America/New_York", now })).toMatchObject({
      at: Date.parse("2026-12-24T13:00:00Z"),
    });
  });

  it("allows an ISO time in the past but flags it", () => {
    expect(parseSchedule("2026-05-01T08:00:00Z", opts)).toMatchObject({ kind: "once", past: true });
  });

  it("says what is wrong and shows a valid example", () => {
    expect(errorOf("0 3 * * * *")).toBe(
      '"0 3 * * * *" has 6 fields; a schedule takes 5 (minute hour day month weekday) (seconds and years are not taken), e.g. "0 3 * * *"; a schedule is a 5-field cron expression ("0 3 * * *", "TZ=Europe/Berlin 0 3 * * *"), "every 30m", "in 10m" or an ISO time ("2026-12-24T08:00:00Z")',
    );
    expect(errorOf("0 3 * *")).toMatch(/has 4 fields; a schedule takes 5/);
    expect(errorOf("61 3 * * *")).toMatch(/not a valid cron expression: .*minute.*e\.g\. "0 3 \* \* \*"/);
    expect(errorOf("TZ=Mars/Olympus 0 3 * * *")).toMatch(
      /unknown time zone "Mars\/Olympus".*e\.g\. "Europe\/Berlin"/,
    );
    expect(errorOf("0 3 * * *", "Nowhere/City")).toMatch(
      /unknown time zone "Nowhere\/City" in the job's time zone/,
    );
    expect(errorOf("every 0m")).toMatch(/"every 0m" is a period of zero or less.*e\.g\. "every 30m"/);
    expect(errorOf("every 30s")).toMatch(/shorter than a minute.*"every 1m"/);
    expect(errorOf("every 5 weeks")).toMatch(/not a duration.*s, m, h or d/);
    expect(errorOf("in -5m")).toMatch(/"in -5m" is a time that is not after now.*e\.g\. "in 10m"/);
    expect(errorOf("2026-13-45T99:00:00Z")).toMatch(/not a valid ISO time/);
    expect(errorOf("")).toMatch(/empty/);
  });
});
