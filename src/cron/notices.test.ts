// The failure streak: one "failing" notice when a streak starts, one "recovered" when it ends,
// nothing per run in between; skipped runs change nothing.
import { describe, expect, it } from "vitest";
import { type HealthStep, nextHealth, noticeOf } from "./notices.js";
import type { HealthRecord, RunRecord, RunState } from "./records.js";

const T0 = Date.parse("2026-12-01T03:00:00Z");
const HOUR = 3_600_000;

function run(i: number, state: RunState): RunRecord {
  return {
    run_key: `nightly-report/${i}`,
    run_id: `cronrun_${i}`,
    job: "nightly-report",
    occurrence: T0 + i * HOUR,
    trigger: "schedule",
    missed: false,
    state,
    reason: state === "skipped" ? "missed by 5 h" : null,
    count: 1,
    until: null,
    owner: null,
    claimed_at: T0 + i * HOUR,
    started_at: T0 + i * HOUR,
    ended_at: T0 + i * HOUR + 60_000,
    session_id: null,
    turn_id: null,
    reply: state === "ok" ? "done" : "",
    error: state === "failed" ? "the provider answered 503" : state === "interrupted" ? "timed out" : null,
    error_code: state === "failed" ? "server_error" : state === "interrupted" ? "timeout" : null,
    silent: false,
    deliver: "local",
    resumed: 0,
  };
}

function play(states: RunState[]): { steps: HealthStep[]; final: HealthRecord | null } {
  let health: HealthRecord | null = null;
  const steps = states.map((state, i) => {
    const step = nextHealth(health, "nightly-report", run(i, state), T0 + i * HOUR + 60_000);
    health = step.health;
    return step;
  });
  return { steps, final: health };
}

describe("nextHealth", () => {
  it("fail, fail, fail, ok, ok, fail, ok gives failing, recovered after 3, failing, recovered after 1", () => {
    const { steps } = play(["failed", "failed", "interrupted", "ok", "ok", "failed", "ok"]);
    expect(steps.map((s) => s.notice)).toEqual([
      "failing",
      null,
      null,
      "recovered",
      null,
      "failing",
      "recovered",
    ]);
    expect(steps.map((s) => s.health.streak)).toEqual([1, 2, 3, 0, 0, 1, 0]);
    expect(steps[3]?.streak).toEqual({ count: 3, since: T0 + 60_000 });
    expect(steps[6]?.streak.count).toBe(1);
    const recovered = noticeOf(steps[3] as HealthStep, "nightly-report", run(3, "ok"));
    expect(recovered?.text).toBe(
      "nightly-report recovered after 3 failed runs (since 2026-12-01T03:01:00.000Z): " +
        "the run of 2026-12-01T06:00:00.000Z succeeded at 2026-12-01T06:01:00.000Z.",
    );
    const failing = noticeOf(steps[0] as HealthStep, "nightly-report", run(0, "failed"));
    expect(failing?.text).toMatch(
      /^nightly-report started failing: the provider answered 503 \(server_error\); 1 failed run so far\./,
    );
    expect(failing?.streak).toBe(1);
  });

  it("skipped runs change nothing and a run seen twice counts once", () => {
    const { steps, final } = play(["failed", "skipped", "failed"]);
    expect(steps.map((s) => s.notice)).toEqual(["failing", null, null]);
    expect(final?.streak).toBe(2);
    expect(steps[1]?.health).toBe(steps[0]?.health);
    const again = nextHealth(final, "nightly-report", run(2, "failed"), T0 + 10 * HOUR);
    expect(again.health.streak).toBe(2);
    expect(again.notice).toBeNull();
  });

  it("an ok run after a streak that was never notified gives no recovered notice", () => {
    const prev: HealthRecord = {
      name: "nightly-report",
      streak: 2,
      failing_since: T0,
      notified: false,
      last_status: "failed",
      last_run_key: "nightly-report/old",
      last_ended_at: T0,
      last_error: "x",
      updated_at: T0,
    };
    expect(nextHealth(prev, "nightly-report", run(1, "ok"), T0 + HOUR).notice).toBeNull();
    // But a failure in it is notified now, once.
    const step = nextHealth(prev, "nightly-report", run(1, "failed"), T0 + HOUR);
    expect(step.notice).toBe("failing");
    expect(step.health.streak).toBe(3);
  });
});
