import { describe, expect, it } from "vitest";
import { ERROR_REASONS } from "./classified-error.js";
import {
  clearedByProbe,
  countsAgainstProvider,
  currentFailure,
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
/** A probe that got through, showing `scope` (reach: a connect; api: the model list; key: with the key). */
const reached = (at: number, scope?: string): ProviderObservation => ({
  ok: true,
  at,
  model: null,
  reason: null,
  message: "connected",
  ...(scope === undefined ? {} : { scope }),
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
    // A connect only shows the host takes connections: a server error stands until a call answers.
    [
      "a connect got through after a call failed with a server error",
      rec({ last_call: bad(5), last_probe: reached(10, "reach") }),
      false,
      "failing",
    ],
    [
      "a connect got through after a call could not connect",
      rec({ last_call: bad(5, "unreachable"), last_probe: reached(10, "reach") }),
      false,
      "ok",
    ],
    ["both failed", rec({ last_call: bad(5), last_probe: bad(10) }), false, "failing"],
  ];
  it.each(rows)("%s", (_what, record, inProcess, expected) => {
    expect(providerCondition(record, inProcess)).toBe(expected);
  });
});

describe("a probe that got through, newer than a failed call, clears it when it can see that kind", () => {
  // Each reason a call may fail with, against what each kind of probe shows. Everything not
  // listed stands until a call succeeds, whatever probe got through since.
  const SEES: Record<string, readonly string[]> = {
    reach: ["unreachable", "timeout"],
    api: ["unreachable", "timeout", "server_error", "overloaded"],
    key: ["unreachable", "timeout", "server_error", "overloaded", "auth", "rate_limit"],
  };
  const rows = Object.entries(SEES).flatMap(([scope, seen]) =>
    ERROR_REASONS.map((reason) => [scope, reason, seen.includes(reason)] as const),
  );
  it.each(rows)("a %s probe after a call that failed with %s: cleared %s", (scope, reason, cleared) => {
    const record = rec({ last_call: bad(5, reason), last_probe: reached(10, scope), failing_since: 5 });
    expect(providerCondition(record, false)).toBe(cleared ? "ok" : "failing");
    expect(clearedByProbe(record)).toEqual(
      cleared ? { call: bad(5, reason), probe: reached(10, scope) } : null,
    );
    expect(currentFailure(record)?.source ?? null).toBe(cleared ? null : "call");
  });

  it("never seen as clearing: billing, a permission, a missing model, a cut or garbled reply", () => {
    for (const reason of ["billing", "auth_permanent", "model_not_found", "stream_drop", "format_error"])
      expect(
        providerCondition(rec({ last_call: bad(5, reason), last_probe: reached(10, "key") }), false),
      ).toBe("failing");
  });

  const timing: [string, ProviderRecord, ReturnType<typeof providerCondition>][] = [
    [
      "the probe is older than the failed call",
      rec({ last_call: bad(10, "unreachable"), last_probe: reached(5, "key") }),
      "failing",
    ],
    [
      "the probe and the failed call at one instant",
      rec({ last_call: bad(10, "unreachable"), last_probe: reached(10, "key") }),
      "failing",
    ],
    // Written before probes said what they showed: read as the least, a connect.
    [
      "a probe with no scope (an older record) clears what a connect sees",
      rec({ last_call: bad(5, "timeout"), last_probe: reached(10) }),
      "ok",
    ],
    [
      "a probe with no scope (an older record) sees no server error",
      rec({ last_call: bad(5), last_probe: reached(10) }),
      "failing",
    ],
    [
      "a scope this Tenax does not know is read as a connect",
      rec({ last_call: bad(5, "auth"), last_probe: reached(10, "everything") }),
      "failing",
    ],
    [
      "a failed probe is no probe that got through",
      rec({ last_call: bad(5, "unreachable"), last_probe: bad(10, "unreachable") }),
      "failing",
    ],
  ];
  it.each(timing)("%s", (_what, record, expected) => {
    expect(providerCondition(record, false)).toBe(expected);
  });

  it("a failed probe after the one that cleared the call makes it failing again", () => {
    let r = withObservation(null, "call", bad(5, "unreachable"));
    r = withObservation(r, "probe", reached(10, "reach"));
    expect(currentFailure(r)).toBeNull();
    expect(providerCondition(r, false)).toBe("ok");
    r = withObservation(r, "probe", bad(15, "unreachable"));
    expect(providerCondition(r, false)).toBe("failing");
    // The failed call stands again (the newest probe shows nothing over), and a call still clears it.
    expect(currentFailure(r)).toMatchObject({ source: "call", observation: { at: 5 } });
    // The calls' streak is the calls' own: a probe neither ends nor starts it.
    expect(r.failing_since).toBe(5);
    r = withObservation(r, "call", ok(20));
    expect(currentFailure(r)).toBeNull();
  });

  it("the fallback that failed once while the primary was down is ok again once the probe reaches it", () => {
    const judged = judgeProviders(
      [
        { provider: "main", in_process: false, record: rec({ last_call: ok(100) }) },
        {
          provider: "backup",
          in_process: false,
          record: rec({
            last_call: bad(50, "unreachable"),
            last_probe: reached(110, "reach"),
            failing_since: 50,
          }),
        },
      ],
      ["main", "backup"],
    );
    expect(judged.status).toBe("ok");
    expect(
      judged.providers.map((p) => [p.provider, p.status, p.failure, p.cleared?.call.at ?? null]),
    ).toEqual([
      ["main", "ok", null, null],
      ["backup", "ok", null, 50],
    ]);
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
          record: rec({ last_call: bad(5, "model_not_found"), last_probe: reached(9, "key") }),
        },
        { provider: "backup", in_process: false, record: rec({ last_probe: bad(7, "timeout") }) },
      ],
      ["main", "backup"],
    );
    expect(judged.providers.map((p) => [p.failure?.source, p.failure?.observation.reason])).toEqual([
      ["call", "model_not_found"],
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
