// A job's failure streak and the two notices it gives: one when the job starts failing and one
// when it recovers, each once per streak, never once per failed run. Pure: the engine writes the
// health record it returns together with the run's end.
import type { HealthRecord, RunRecord } from "./records.js";

export type NoticeKind = "failing" | "recovered";

export interface HealthStep {
  health: HealthRecord;
  notice: NoticeKind | null;
  /** The streak the notice speaks of: the current one (failing) or the one just ended (recovered). */
  streak: { count: number; since: number | null };
}

/** A notice ready for the outbox (delivery.ts outboxOps). */
export interface Notice {
  kind: NoticeKind;
  text: string;
  streak: number;
}

function blank(name: string, now: number): HealthRecord {
  return {
    name,
    streak: 0,
    failing_since: null,
    notified: false,
    last_status: null,
    last_run_key: null,
    last_ended_at: null,
    last_error: null,
    updated_at: now,
  };
}

/**
 * The health after `run` ended. `failed` and `interrupted` count as failures, `ok` ends a streak;
 * any other state (skipped, or one not final) changes nothing. The same run seen twice (a run's
 * end settled again after a crash) is counted once.
 */
export function nextHealth(prev: HealthRecord | null, name: string, run: RunRecord, now: number): HealthStep {
  const base = prev ?? blank(name, now);
  const unchanged: HealthStep = {
    health: base,
    notice: null,
    streak: { count: base.streak, since: base.failing_since },
  };
  if (prev !== null && prev.last_run_key === run.run_key) return unchanged;
  const endedAt = run.ended_at ?? now;
  const last = { last_status: run.state, last_run_key: run.run_key, last_ended_at: endedAt, updated_at: now };
  if (run.state === "failed" || run.state === "interrupted") {
    const streak = base.streak + 1;
    const since = base.streak > 0 ? (base.failing_since ?? endedAt) : endedAt;
    // A streak not yet notified (its first run, or a record from before notices) is notified now.
    const notice: NoticeKind | null = base.streak > 0 && base.notified ? null : "failing";
    return {
      health: { ...base, ...last, streak, failing_since: since, notified: true, last_error: run.error },
      notice,
      streak: { count: streak, since },
    };
  }
  if (run.state === "ok") {
    const ended = { count: base.streak, since: base.failing_since };
    const notice: NoticeKind | null = base.streak > 0 && base.notified ? "recovered" : null;
    return {
      health: { ...base, ...last, streak: 0, failing_since: null, notified: false, last_error: null },
      notice,
      streak: ended,
    };
  }
  return unchanged;
}

const runs = (n: number) => (n === 1 ? "1 failed run" : `${n} failed runs`);
const iso = (t: number | null) => (t === null ? "an unknown time" : new Date(t).toISOString());

/** The one-paragraph message a notice carries, for people. */
export function noticeText(
  kind: NoticeKind,
  job: string,
  streak: { count: number; since: number | null },
  run: RunRecord,
): string {
  if (kind === "failing") {
    const why = run.error ?? "no error was recorded";
    const code = run.error_code === null ? "" : ` (${run.error_code})`;
    return (
      `${job} started failing: ${why}${code}; ${runs(streak.count)} so far. ` +
      `This is said once; the next notice comes when a run succeeds again. ` +
      `tenax cron runs ${job} shows its runs.`
    );
  }
  return (
    `${job} recovered after ${runs(streak.count)} (since ${iso(streak.since)}): ` +
    `the run of ${iso(run.occurrence)} succeeded at ${iso(run.ended_at)}.`
  );
}

/** The notice a health step gives, with its text, or null. */
export function noticeOf(step: HealthStep, job: string, run: RunRecord): Notice | null {
  if (step.notice === null) return null;
  return {
    kind: step.notice,
    text: noticeText(step.notice, job, step.streak, run),
    streak: step.streak.count,
  };
}
