import { describe, expect, it } from "vitest";
import { thrown } from "../../test/helpers/temp-home.js";
import type { AuditRecord } from "../agent/audit-trail.js";
import { formatRecord, matches, parseEventsFlags, parseSince } from "./events-query.js";

const NOW = Date.UTC(2026, 11, 5, 8, 0, 0);

function record(over: Partial<AuditRecord>): AuditRecord {
  return {
    time: "2026-12-05T07:30:00.000Z",
    layer: "retry",
    type: "retry",
    session_id: "s_01abc",
    message: "simulated error 503",
    source: "gateway",
    pid: 1,
    data: {},
    ...over,
  };
}

describe("tenax events: flags", () => {
  it("reads --since as a duration back from now or as an ISO time", () => {
    expect(parseSince("30s", NOW)).toBe(NOW - 30_000);
    expect(parseSince("15m", NOW)).toBe(NOW - 15 * 60_000);
    expect(parseSince("1h", NOW)).toBe(NOW - 3_600_000);
    expect(parseSince("2d", NOW)).toBe(NOW - 2 * 86_400_000);
    expect(parseSince("2026-12-05T03:00:00Z", NOW)).toBe(Date.UTC(2026, 11, 5, 3));
    expect(parseSince("2026-12-05", NOW)).toBe(Date.UTC(2026, 11, 5));
  });

  it("refuses a bad --since as a usage error naming the flag and an example", () => {
    for (const bad of ["1x", "", "h", "-1h", "yesterday", "2026-13-45T00:00:00Z", "1.5h"]) {
      const error = thrown(() => parseSince(bad, NOW));
      expect(error.exitCode).toBe(2);
      expect(error.message).toContain("--since");
      expect(error.hint).toContain("--since 1h");
    }
  });

  it("takes comma-separated layers and types; an empty one is a usage error", () => {
    expect(parseEventsFlags({ layer: "retry, fallback", type: "retry" }, NOW)).toEqual({
      since: null,
      layers: ["retry", "fallback"],
      types: ["retry"],
      session: null,
    });
    const error = thrown(() => parseEventsFlags({ layer: " , " }, NOW));
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain("--layer");
    expect(thrown(() => parseEventsFlags({ session: " " }, NOW)).message).toContain("--session");
  });
});

describe("tenax events: filters and lines", () => {
  const rs = [
    record({ time: "2026-12-05T06:00:00.000Z", type: "retry", session_id: "s_01abc" }),
    record({ time: "2026-12-05T07:45:00.000Z", layer: "fallback", type: "fallback", session_id: "s_01abc" }),
    record({ time: "2026-12-05T07:50:00.000Z", type: "retry_exhausted", session_id: "s_02def" }),
    record({ time: "2026-12-05T07:55:00.000Z", layer: "store", type: "store.corrupt", session_id: null }),
  ];
  const pick = (flags: Parameters<typeof parseEventsFlags>[0]) =>
    rs.filter((r) => matches(r, parseEventsFlags(flags, NOW))).map((r) => r.type);

  it("filters by time, layer, type and session (an id or its start)", () => {
    expect(pick({})).toEqual(["retry", "fallback", "retry_exhausted", "store.corrupt"]);
    expect(pick({ since: "1h" })).toEqual(["fallback", "retry_exhausted", "store.corrupt"]);
    expect(pick({ layer: "retry" })).toEqual(["retry", "retry_exhausted"]);
    expect(pick({ type: "retry_exhausted,store.corrupt" })).toEqual(["retry_exhausted", "store.corrupt"]);
    expect(pick({ session: "s_01" })).toEqual(["retry", "fallback"]);
    expect(pick({ session: "s_01", since: "1h", layer: "fallback" })).toEqual(["fallback"]);
  });

  it("prints one line: time, layer, type, session, the key fields, the message", () => {
    const text = formatRecord(
      record({
        provider: "sim",
        model: "echo",
        attempt: 2,
        max_attempts: 4,
        delay_ms: 700,
        reason: "server_error",
      }),
    );
    expect(text).toMatch(
      /^2026-12-05 07:30:00\.000 {2}retry +retry +s_01abc {2}\[sim\/echo, attempt 2\/4, delay 700ms, reason server_error\] {2}simulated error 503$/,
    );
    expect(formatRecord(record({ session_id: null, layer: "store", type: "store.corrupt" }))).toContain(
      "  -  ",
    );
  });
});
