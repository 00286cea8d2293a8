// The missed-run rule: after downtime, which occurrences of a job run now and which are recorded
// as skipped, and why. Nothing missed is silent, and the work is bounded however long the downtime.

import { countBetween, latestAtOrBefore, nextAfter } from "./next.js";
import type { Schedule } from "./schedule.js";

export const GRACE_MIN_MS = 2 * 60_000;
export const GRACE_MAX_MS = 2 * 3_600_000;
/** A one-shot has no period; it may still run this late. */
export const ONCE_GRACE_MS = GRACE_MAX_MS;
/**
 * An occurrence at most this late is simply due (a tick's lag), not missed: unless it fell due
 * before the scheduler that plans began watching (MissedInput.watchedSince).
 */
export const ON_TIME_MS = 60_000;
/** Skipped occurrences listed one by one; older ones are one summary entry with a count. */
export const LISTED_MAX = 50;
/** The most occurrences a summary counts for a cron expression (a per-minute job down for years). */
export const COUNT_CAP = 1_000;

export interface SkippedRun {
  /** The occurrence, or for a summary the first one in it. */
  at: number;
  /** 1, or for a summary how many occurrences it stands for. */
  count: number;
  /** For a summary: the last occurrence in it. */
  until?: number;
  /** For a summary of a cron expression that stopped counting at COUNT_CAP: there were more. */
  more?: boolean;
  reason: string;
}

export interface MissedPlan {
  /** An occurrence due now (at most ON_TIME_MS late): a normal run. */
  due: number | null;
  /** One missed occurrence to run now, marked missed: the newest one, within its grace window. */
  catchUp: number | null;
  /** Every other occurrence since the last claim, oldest first. */
  skipped: SkippedRun[];
  /** The first occurrence after now. */
  next: number | null;
}

export interface MissedInput {
  /** The last claimed occurrence, or the job's creation time: occurrences after it are owed. */
  since: number;
  now: number;
  /** The job's catch_up setting; false records every missed occurrence as skipped. */
  catchUp: boolean;
  /**
   * When the scheduler that plans began watching (a gateway's start). An occurrence before it fell
   * due while no scheduler ran: it is missed however recently, never a due run claimed late (whose
   * lateness would read as the scheduler's lag). Left out by a one-off `tenax cron tick`, whose
   * runs are always a little late: there an occurrence at most ON_TIME_MS late is due.
   */
  watchedSince?: number | null;
}

/** Half the period around the occurrence, clamped to 2 minutes .. 2 hours; 2 hours for a one-shot. */
export function graceFor(schedule: Schedule, at: number): number {
  let period: number;
  switch (schedule.kind) {
    case "once":
      return ONCE_GRACE_MS;
    case "every":
      period = schedule.period_ms;
      break;
    case "cron": {
      const after = nextAfter(schedule, at);
      period = after === null ? GRACE_MAX_MS * 2 : after - at;
      break;
    }
    default: {
      const never: never = schedule;
      throw new Error(`unknown schedule ${String(never)}`);
    }
  }
  return Math.min(GRACE_MAX_MS, Math.max(GRACE_MIN_MS, Math.floor(period / 2)));
}

export function planMissed(schedule: Schedule, input: MissedInput): MissedPlan {
  const { since, now } = input;
  const next = nextAfter(schedule, now);
  const recent = latestAtOrBefore(schedule, now, LISTED_MAX, since);
  let due: number | null = null;
  let catchUp: number | null = null;
  const newest = recent[0];
  const watched = input.watchedSince ?? Number.NEGATIVE_INFINITY;
  if (newest !== undefined) {
    const late = now - newest;
    if (late <= ON_TIME_MS && newest >= watched) due = newest;
    else if (input.catchUp && late <= graceFor(schedule, newest)) catchUp = newest;
  }
  const run = due ?? catchUp;
  const skipped: SkippedRun[] = [];
  for (const at of recent.slice().reverse()) {
    if (at === run) continue;
    skipped.push({ at, count: 1, reason: reasonFor(schedule, at, now, input.catchUp, run, due !== null) });
  }
  const oldestListed = recent[recent.length - 1];
  if (recent.length === LISTED_MAX && oldestListed !== undefined) {
    const count = countBetween(schedule, since, oldestListed, COUNT_CAP);
    if (count > 0) {
      const first = nextAfter(schedule, since) ?? since;
      const before = latestAtOrBefore(schedule, oldestListed - 1, 1, since)[0] ?? first;
      const more = schedule.kind === "cron" && count >= COUNT_CAP;
      const reason = input.catchUp
        ? `${more ? `${count} or more` : count} occurrences missed by more than the grace window`
        : `${more ? `${count} or more` : count} occurrences missed; catch_up is off`;
      skipped.unshift({ at: first, count, until: before, ...(more ? { more } : {}), reason });
    }
  }
  return { due, catchUp, skipped, next };
}

function reasonFor(
  schedule: Schedule,
  at: number,
  now: number,
  catchUpOn: boolean,
  run: number | null,
  runIsDue: boolean,
): string {
  const late = now - at;
  if (!catchUpOn) return `missed by ${span(late)}; catch_up is off`;
  const grace = graceFor(schedule, at);
  if (late > grace) return `missed by ${span(late)}, beyond the ${span(grace)} grace window`;
  if (run !== null) {
    return runIsDue
      ? `missed by ${span(late)}; the run due now stands for it`
      : `missed by ${span(late)}; collapsed into the one catch-up run`;
  }
  return `missed by ${span(late)}`;
}

/** A duration as an operator reads it: "45 s", "2.5 min", "80 min", "5 h", "3 d". */
export function span(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3_600_000) return `${roundTo(ms / 60_000)} min`;
  if (ms < 2 * 86_400_000) return `${roundTo(ms / 3_600_000)} h`;
  return `${roundTo(ms / 86_400_000)} d`;
}

function roundTo(value: number): string {
  const rounded = Math.round(value * 10) / 10;
  return Number.isInteger(rounded) ? String(rounded) : rounded.toFixed(1);
}
