// When a schedule's occurrences fall: the first one strictly after an instant, those in a window,
// and the newest ones at or before an instant (for the missed-run rule).

import { Cron } from "croner";
import type { Schedule } from "./schedule.js";

// Parsing an expression costs far more than asking it for a time; the scheduler asks often.
const cache = new Map<string, Cron>();
const CACHE_MAX = 2000;

function cronOf(expression: string, timezone: string): Cron {
  const key = `${timezone} ${expression}`;
  let cron = cache.get(key);
  if (!cron) {
    if (cache.size >= CACHE_MAX) cache.clear();
    cron = new Cron(expression, { timezone, paused: true, mode: "5-part" });
    cache.set(key, cron);
  }
  return cron;
}

/** The first occurrence strictly after t, or null when there is none (a one-shot that is past). */
export function nextAfter(schedule: Schedule, t: number): number | null {
  switch (schedule.kind) {
    case "cron":
      return cronOf(schedule.expression, schedule.timezone).nextRun(new Date(t))?.getTime() ?? null;
    case "every": {
      const { anchor, period_ms: p } = schedule;
      const k = t < anchor ? 1 : Math.floor((t - anchor) / p) + 1;
      return anchor + k * p;
    }
    case "once":
      return schedule.at > t ? schedule.at : null;
    default: {
      const never: never = schedule;
      throw new Error(`unknown schedule ${String(never)}`);
    }
  }
}

/** Occurrences in (from, to], oldest first, at most limit of them. */
export function occurrencesBetween(schedule: Schedule, from: number, to: number, limit: number): number[] {
  const out: number[] = [];
  if (schedule.kind === "cron") {
    const cron = cronOf(schedule.expression, schedule.timezone);
    let cursor = new Date(from);
    while (out.length < limit) {
      // In batches: croner keeps its place within one nextRuns call.
      const batch = cron.nextRuns(Math.min(256, limit - out.length), cursor);
      for (const d of batch) {
        const at = d.getTime();
        if (at > to) return out;
        out.push(at);
      }
      const last = batch[batch.length - 1];
      if (!last) return out;
      cursor = last;
    }
    return out;
  }
  let at = nextAfter(schedule, from);
  while (at !== null && at <= to && out.length < limit) {
    out.push(at);
    at = nextAfter(schedule, at);
  }
  return out;
}

/** The newest occurrences in (after, t], newest first, at most n of them. */
export function latestAtOrBefore(schedule: Schedule, t: number, n: number, after: number): number[] {
  switch (schedule.kind) {
    case "cron": {
      const cron = cronOf(schedule.expression, schedule.timezone);
      // previousRuns is strictly before its reference, so ask from just after t.
      return cron
        .previousRuns(n, new Date(t + 1))
        .map((d) => d.getTime())
        .filter((at) => at > after && at <= t);
    }
    case "every": {
      const { anchor, period_ms: p } = schedule;
      const out: number[] = [];
      let k = Math.floor((t - anchor) / p);
      while (k >= 1 && out.length < n) {
        const at = anchor + k * p;
        if (at <= after) break;
        out.push(at);
        k -= 1;
      }
      return out;
    }
    case "once":
      return schedule.at > after && schedule.at <= t ? [schedule.at] : [];
    default: {
      const never: never = schedule;
      throw new Error(`unknown schedule ${String(never)}`);
    }
  }
}

/** How many occurrences fall in (from, to), counting at most cap; exact for `every` and one-shots. */
export function countBetween(schedule: Schedule, from: number, to: number, cap: number): number {
  if (to <= from) return 0;
  if (schedule.kind === "every") {
    const { anchor, period_ms: p } = schedule;
    const first = Math.max(1, Math.floor((from - anchor) / p) + 1);
    const last = Math.ceil((to - anchor) / p) - 1;
    return Math.max(0, last - first + 1);
  }
  return occurrencesBetween(schedule, from, to - 1, cap).length;
}
