import { describe, expect, it } from "vitest";
import {
  countsAgainstProvider,
  judgeProviders,
  mergeRecords,
  type ProviderObservation,
  type ProviderRecord,
  providerCondition,
  withObservation,
} from "./provider-state.js";

const ok = (at: number): ProviderObservation => ({ ok: true, at, model: "m", reason: null, message: null });
const bad = (at: number, reason = "server_error"): ProviderObservation => ({
  ok: false,
  at,
  model: "m",
  reason,
  message: "connect ECONNREFUSED 127.0.0.1:9",
});
const rec = (r: Partial<ProviderRecord>): ProviderRecord => ({
  last_call: null,
  last_probe: null,
  last_success_at: null,
  failing_since: null,
  ...r,
});

describe("providerCondition: one provider's latest word", () => {
  const rows: [string, ProviderRecord | null, boolean, ReturnType<typeof providerCondition>][] = [
    ["never seen", null, false, "unknown"],
    ["never seen, in-process", null, true, "ok"],
    ["an empty record", rec({}), false, "unknown"],
    ["a call answered", rec({ last_call: ok(10) }), false, "ok"],
    ["a call failed", rec({ last_call: bad(10) }), false, "failing"],
    ["a call failed in-process", rec({ last_call: bad(10) }), true, "failing"],
    ["the probe reached it, never called", rec({ last_probe: ok(10) }), false, "ok"],
    ["the probe failed, never called", rec({ last_probe: bad(10) }), false, "failing"],
    [
      "the probe failed after a call answered",
      rec({ last_call: ok(5), last_probe: bad(10) }),
      false,
      "failing",
    ],
    ["a call answered after the probe failed", rec({ last_call: ok(10), last_probe: bad(5) }), false, "ok"],
    // A probe only shows the host answers: a failed call stands until a call answers.
    [
      "the probe reached it after a call failed",
      rec({ last_call: bad(5), last_probe: ok(10) }),
      false,
      "failing",
    ],
    ["both failed", rec({ last_call: bad(5), last_probe: bad(10) }), false, "failing"],
  ];
  it.each(rows)("%s", (_what, record, inProcess, expected) => {
    expect(providerCondition(record, inProcess)).toBe(expected);
  });
});

describe("judgeProviders: the chain decides degraded or down", () => {
  type Row = [
    string,
    Record<string, ProviderRecord | null>,
    string[],
    string,
    Record<string, string>,
    string[]?,
  ];
  const rows: Row[] = [
    ["one provider answering", { main: rec({ last_call: ok(1) }) }, ["main"], "ok", { main: "ok" }],
    ["one provider never seen", { main: null }, ["main"], "unknown", { main: "unknown" }],
    [
      "one provider failing: nothing answers",
      { main: rec({ last_call: bad(1) }) },
      ["main"],
      "down",
      { main: "down" },
    ],
    [
      "primary failing, fallback answering",
      { main: rec({ last_call: bad(1) }), backup: rec({ last_call: ok(2) }) },
      ["main", "backup"],
      "degraded",
      { main: "degraded", backup: "ok" },
    ],
    [
      "primary failing, fallback never seen: it may answer, so not down",
      { main: rec({ last_call: bad(1) }), backup: null },
      ["main", "backup"],
      "degraded",
      { main: "degraded", backup: "unknown" },
    ],
    [
      "primary and fallback failing",
      { main: rec({ last_call: bad(1) }), backup: rec({ last_probe: bad(2) }) },
      ["main", "backup"],
      "down",
      { main: "down", backup: "down" },
    ],
    [
      "primary answering, fallback never seen: ok (a fallback is seen when it is needed)",
      { main: rec({ last_call: ok(1) }), backup: null },
      ["main", "backup"],
      "ok",
      { main: "ok", backup: "unknown" },
    ],
    [
      "primary never seen, fallback answering",
      { main: null, backup: rec({ last_call: ok(1) }) },
      ["main", "backup"],
      "unknown",
      { main: "unknown", backup: "ok" },
    ],
    [
      "a side-task provider failing while the chain answers",
      { main: rec({ last_call: ok(1) }), aux: rec({ last_call: bad(2) }) },
      ["main"],
      "degraded",
      { main: "ok", aux: "degraded" },
    ],
    [
      "primary and fallback on one provider, failing",
      { main: rec({ last_call: bad(1) }) },
      ["main", "main"],
      "down",
      { main: "down" },
    ],
    ["the built-in simulator", { simulator: null }, ["simulator"], "ok", { simulator: "ok" }, ["simulator"]],
    [
      "an in-process simulator whose calls fail",
      { sim: rec({ last_call: bad(1) }) },
      ["sim"],
      "down",
      { sim: "down" },
      ["sim"],
    ],
    [
      "back: a call answered after the failures",
      { main: rec({ last_call: ok(9), last_probe: bad(3), failing_since: null, last_success_at: 9 }) },
      ["main"],
      "ok",
      { main: "ok" },
    ],
  ];
  it.each(rows)("%s", (_what, records, chain, whole, each, inProcess = []) => {
    const judged = judgeProviders(
      Object.entries(records).map(([provider, record]) => ({
        provider,
        record,
        in_process: inProcess.includes(provider),
      })),
      chain,
    );
    expect(judged.status).toBe(whole);
    expect(Object.fromEntries(judged.providers.map((p) => [p.provider, p.status]))).toEqual(each);
  });

  it("names the failure a failing provider is judged by, and whether a call or the probe saw it", () => {
    const judged = judgeProviders(
      [
        {
          provider: "main",
          in_process: false,
          record: rec({ last_call: bad(5, "unreachable"), last_probe: ok(9) }),
        },
        { provider: "backup", in_process: false, record: rec({ last_probe: bad(7, "timeout") }) },
      ],
      ["main", "backup"],
    );
    expect(judged.providers.map((p) => [p.failure?.source, p.failure?.observation.reason])).toEqual([
      ["call", "unreachable"],
      ["probe", "timeout"],
    ]);
  });
});

describe("the record's facts", () => {
  it("a failing streak starts at its first failure and ends with a success", () => {
    let r = withObservation(null, "call", ok(1));
    expect(r).toMatchObject({ last_success_at: 1, failing_since: null });
    r = withObservation(r, "call", bad(2));
    r = withObservation(r, "call", bad(3));
    expect(r).toMatchObject({ last_success_at: 1, failing_since: 2, last_call: { at: 3, ok: false } });
    r = withObservation(r, "probe", ok(4));
    expect(r.failing_since).toBe(2);
    r = withObservation(r, "call", ok(5));
    expect(r).toMatchObject({ last_success_at: 5, failing_since: null });
  });

  it("an observation older than the one it would replace changes nothing", () => {
    const r = withObservation(rec({ last_call: ok(10) }), "call", bad(5));
    expect(r.last_call?.at).toBe(10);
  });

  it("two views merge into the newest of each fact", () => {
    const gateway = rec({ last_call: bad(20), failing_since: 15, last_success_at: 10 });
    const chat = rec({ last_call: ok(12), last_success_at: 12, last_probe: ok(30) });
    expect(mergeRecords(gateway, chat)).toEqual({
      last_call: bad(20),
      last_probe: ok(30),
      last_success_at: 12,
      // The gateway's streak began at 15, but chat's call answered at 12: still after it.
      failing_since: 15,
    });
    // A success after the other side's streak began ends that streak's claim.
    const later = rec({ last_call: bad(40), failing_since: 40, last_success_at: 35 });
    expect(mergeRecords(gateway, later)?.failing_since).toBe(40);
    expect(mergeRecords(null, chat)).toEqual(chat);
  });

  it("a failure counts against a provider when the classifier says another model may do better", () => {
    expect(countsAgainstProvider({ reason: "server_error", fallback: true })).toBe(true);
    // Whatever new reason the classifier names: its flag decides, not a list here.
    expect(countsAgainstProvider({ reason: "unreachable" as "unknown", fallback: true })).toBe(true);
    expect(countsAgainstProvider({ reason: "context_overflow", fallback: false })).toBe(false);
    expect(countsAgainstProvider({ reason: "invalid_request", fallback: false })).toBe(false);
    expect(countsAgainstProvider({ reason: "aborted", fallback: true })).toBe(false);
  });
});
