// A job's schedule, parsed once into plain data that the store can keep: a 5-field cron
// expression in a time zone, a fixed period (`every 30m`), or one instant (`in 10m`, an ISO time).

import { Cron } from "croner";
import { TenaxError, type TenaxErrorOptions } from "../core/errors.js";

export type Schedule = CronSchedule | EverySchedule | OnceSchedule;

export interface CronSchedule {
  kind: "cron";
  /** The spec as the operator wrote it. */
  spec: string;
  /** The 5 fields (or an @nickname), without the TZ= prefix. */
  expression: string;
  timezone: string;
}

export interface EverySchedule {
  kind: "every";
  spec: string;
  period_ms: number;
  /** Occurrences are anchor + k * period for k >= 1: the first one is a period after parsing. */
  anchor: number;
  timezone: string;
}

export interface OnceSchedule {
  kind: "once";
  spec: string;
  at: number;
  timezone: string;
  /** The instant was already past when the spec was parsed (an ISO time): shown as a warning. */
  past: boolean;
}

export class ScheduleError extends TenaxError {
  override readonly name = "ScheduleError";
  constructor(message: string, options: TenaxErrorOptions = {}) {
    super("schedule_invalid", message, { exitCode: 2, ...options });
  }
}

export interface ParseOptions {
  /** The job's time zone when the spec names none (the profile's). */
  timezone: string;
  now: number;
}

export const MIN_PERIOD_MS = 60_000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const FORMS =
  'a schedule is a 5-field cron expression ("0 3 * * *", "TZ=Europe/Berlin 0 3 * * *"), "every 30m", "in 10m" or an ISO time ("2026-12-24T08:00:00Z")';

export function parseSchedule(spec: string, options: ParseOptions): Schedule {
  const text = spec.trim().replace(/\s+/g, " ");
  if (text === "") throw new ScheduleError(`the schedule is empty; ${FORMS}`);
  const every = /^every\s+(.*)$/i.exec(text);
  if (every) return parseEvery(spec, every[1] ?? "", options);
  const inMatch = /^in\s+(.*)$/i.exec(text);
  if (inMatch) return parseIn(spec, inMatch[1] ?? "", options);
  if (/^\d{4}-\d{2}-\d{2}T/.test(text)) return parseIso(spec, text, options);
  return parseCron(spec, text, options);
}

/** Throws unless the zone is an IANA name this Node knows. */
export function checkTimezone(zone: string, where: string): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
  } catch {
    throw new ScheduleError(
      `unknown time zone "${zone}" in ${where}; use an IANA name, e.g. "Europe/Berlin" or "UTC"`,
    );
  }
  return zone;
}

function parseDuration(spec: string, body: string, form: "every" | "in"): number {
  const match = /^(-?\d+)\s*([smhd])$/i.exec(body.trim());
  const example = form === "every" ? '"every 30m"' : '"in 10m"';
  if (!match) {
    throw new ScheduleError(
      `"${spec}" is not a duration; ${form} takes a whole number and a unit s, m, h or d, e.g. ${example}`,
    );
  }
  const count = Number(match[1]);
  const ms = count * UNIT_MS[(match[2] ?? "").toLowerCase()]!;
  if (count <= 0) {
    const what = form === "every" ? "a period of zero or less" : "a time that is not after now";
    throw new ScheduleError(`"${spec}" is ${what}; ${form} takes a duration above 0, e.g. ${example}`);
  }
  return ms;
}

function parseEvery(spec: string, body: string, options: ParseOptions): EverySchedule {
  const period = parseDuration(spec, body, "every");
  if (period < MIN_PERIOD_MS) {
    throw new ScheduleError(`"${spec}" is shorter than a minute; the shortest period is 1m, e.g. "every 1m"`);
  }
  const timezone = checkTimezone(options.timezone, `"${spec}"`);
  return { kind: "every", spec, period_ms: period, anchor: options.now, timezone };
}

function parseIn(spec: string, body: string, options: ParseOptions): OnceSchedule {
  const delay = parseDuration(spec, body, "in");
  const timezone = checkTimezone(options.timezone, `"${spec}"`);
  return { kind: "once", spec, at: options.now + delay, timezone, past: false };
}

const ISO_ZONED = /(Z|[+-]\d{2}:?\d{2})$/i;
const ISO_LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

function parseIso(spec: string, text: string, options: ParseOptions): OnceSchedule {
  const timezone = checkTimezone(options.timezone, `"${spec}"`);
  const example = 'e.g. "2026-12-24T08:00:00Z", or "2026-12-24T08:00" in the job\'s time zone';
  let at: number;
  if (ISO_ZONED.test(text)) {
    at = Date.parse(text);
  } else if (ISO_LOCAL.test(text)) {
    // A wall-clock time in the job's zone; croner resolves it (a time in a DST gap moves forward).
    try {
      at = new Cron(text, { timezone, paused: true }).getOnce()?.getTime() ?? Number.NaN;
    } catch {
      at = Number.NaN;
    }
  } else {
    at = Number.NaN;
  }
  if (!Number.isFinite(at)) throw new ScheduleError(`"${spec}" is not a valid ISO time; ${example}`);
  return { kind: "once", spec, at, timezone, past: at <= options.now };
}

function parseCron(spec: string, text: string, options: ParseOptions): CronSchedule {
  let expression = text;
  let timezone = options.timezone;
  const prefix = /^(?:CRON_)?TZ=(\S+)\s+(.*)$/i.exec(text);
  if (prefix) {
    timezone = prefix[1] ?? "";
    expression = prefix[2] ?? "";
    checkTimezone(timezone, `"${spec}"`);
  } else {
    checkTimezone(timezone, `the job's time zone for "${spec}"`);
  }
  const fields = expression.split(" ");
  if (!(fields.length === 1 && fields[0]?.startsWith("@")) && fields.length !== 5) {
    const more = fields.length > 5 ? " (seconds and years are not taken)" : "";
    throw new ScheduleError(
      `"${spec}" has ${fields.length} field${fields.length === 1 ? "" : "s"}; a schedule takes 5 (minute hour day month weekday)${more}, e.g. "0 3 * * *"; ${FORMS}`,
    );
  }
  try {
    new Cron(expression, { timezone, paused: true, mode: "5-part" });
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^CronPattern:\s*/, "") : String(error);
    throw new ScheduleError(
      `"${spec}" is not a valid cron expression: ${why}; e.g. "0 3 * * *" (03:00 daily)`,
      {
        cause: error,
      },
    );
  }
  return { kind: "cron", spec, expression, timezone };
}
