// A model's circuit breaker as data and pure rules: the durable record (kind "breaker", key
// "PROVIDER/MODEL") that every process of the profile reads and claims, and the transitions
// closed → open (repeated failures that say the model is unwell) → half_open (its cool-down is
// over: one probe call may go) → closed (a call answered) or open again (the probe failed, for a
// longer cool-down). No clock, store or I/O here: breaker.ts applies these through the store.
import { z } from "zod";
import type { ClassifiedError } from "./classified-error.js";
import { MODEL_UNWELL } from "./classify-rules.js";
import type { Target } from "./route-events.js";

export const BREAKER_RECORD_KIND = "breaker";

export const CIRCUITS = ["closed", "open", "half_open"] as const;
export type Circuit = (typeof CIRCUITS)[number];

export interface BreakerSettings {
  /** Off: every call goes to the model whatever it did before. */
  enabled: boolean;
  /** Failures in a row (each within `window_ms` of the one before) that open the circuit. */
  failures: number;
  window_ms: number;
  /** How long an opened circuit refuses calls before one probe call is let through. */
  cooldown_ms: number;
  /** The cool-down doubles after each failed probe, up to this. */
  max_cooldown_ms: number;
}

/** The documented defaults (docs/CONFIG.md, `breaker:`). */
export const DEFAULT_BREAKER: BreakerSettings = {
  enabled: true,
  failures: 5,
  window_ms: 60_000,
  cooldown_ms: 30_000,
  max_cooldown_ms: 600_000,
};

/** config.yaml's `breaker:` section, in seconds. */
export interface BreakerConfig {
  enabled: boolean;
  failures: number;
  window: number;
  cooldown: number;
  max_cooldown: number;
}

export function breakerSettings(config: BreakerConfig): BreakerSettings {
  const ms = (s: number) => Math.max(1, Math.round(s * 1000));
  return {
    enabled: config.enabled,
    failures: config.failures,
    window_ms: ms(config.window),
    cooldown_ms: ms(config.cooldown),
    max_cooldown_ms: ms(config.max_cooldown),
  };
}

/**
 * A probe claimed by a process that never reported (it hung past every provider timeout, or was
 * killed off Linux where its end cannot be seen) is free again after this: the default whole-call
 * limit (600 s) and a margin.
 */
export const PROBE_LEASE_MS = 630_000;

// Not strict: a record written by a newer Tenax may carry more, and is still read.
export const breakerRecordSchema = z.object({
  provider: z.string(),
  model: z.string(),
  /** half_open is not stored: it is an open circuit whose cool-down is over. */
  state: z.enum(["closed", "open"]),
  /** Unwell failures in the present streak (for a closed circuit), or since it opened. */
  failures: z.number(),
  last_failure_at: z.number().nullable(),
  /** The classified reason of the last unwell failure. */
  reason: z.string().nullable(),
  opened_at: z.number().nullable(),
  /** When an open circuit's cool-down ends (a probe may go then). */
  until: z.number().nullable(),
  /** Opens since it last closed: each failed probe doubles the cool-down. */
  opens: z.number(),
  /** The process that holds the one probe call of a half-open circuit, and since when. */
  probe: z.object({ owner: z.string(), at: z.number() }).nullable(),
  updated_at: z.number(),
});
export type BreakerRecord = z.infer<typeof breakerRecordSchema>;

export function breakerKey(target: Target): string {
  return `${target.provider}/${target.model}`;
}

export function parseBreakerRecord(value: unknown): BreakerRecord | null {
  const parsed = breakerRecordSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** Whether a failure counts toward opening the breaker: the classifier's reasons say (MODEL_UNWELL). */
export function countsAgainstModel(error: Pick<ClassifiedError, "reason">): boolean {
  return MODEL_UNWELL[error.reason];
}

/** What a record says now. */
export function circuitOf(record: BreakerRecord | null, now: number): Circuit {
  if (record === null || record.state === "closed") return "closed";
  return record.until !== null && now < record.until ? "open" : "half_open";
}

/** The cool-down after the n-th open since the circuit last closed (1: the first). */
export function cooldownFor(opens: number, settings: BreakerSettings): number {
  const grown = settings.cooldown_ms * 2 ** Math.max(0, opens - 1);
  return Math.min(settings.max_cooldown_ms, Math.max(settings.cooldown_ms, grown));
}

/** Whether a claimed probe still holds: its lease runs, and its process is not known to be gone. */
export function probeHeld(record: BreakerRecord, now: number, gone: (owner: string) => boolean): boolean {
  const probe = record.probe;
  return probe !== null && now - probe.at < PROBE_LEASE_MS && !gone(probe.owner);
}

/** What may happen to a call now. */
export type Admission =
  /** Closed: the call goes. */
  | { decision: "closed" }
  /** Half-open, and this caller takes the one probe: write `claim` first (only one writer wins). */
  | { decision: "probe"; claim: BreakerRecord }
  /** Open, or half-open with the probe held elsewhere: no call, until `retry_at`. */
  | { decision: "open"; retry_at: number; reason: string | null };

export function admit(
  record: BreakerRecord | null,
  now: number,
  owner: string,
  gone: (owner: string) => boolean,
  settings: BreakerSettings,
): Admission {
  const circuit = circuitOf(record, now);
  if (record === null || circuit === "closed") return { decision: "closed" };
  if (circuit === "open") return { decision: "open", retry_at: record.until ?? now, reason: record.reason };
  if (probeHeld(record, now, gone))
    // Someone's probe is out: its answer comes within a call's time; ask again after a cool-down.
    return { decision: "open", retry_at: now + settings.cooldown_ms, reason: record.reason };
  return { decision: "probe", claim: { ...record, probe: { owner, at: now }, updated_at: now } };
}

/** A change a call's end makes: the record to write, and the event it is. */
export interface Transition {
  record: BreakerRecord;
  change: "opened" | "reopened" | "closed" | "released" | "counted";
}

/** A call answered: a circuit with anything to forget closes; a clean one needs no write. */
export function afterSuccess(record: BreakerRecord | null, now: number): Transition | null {
  if (record === null || (record.state === "closed" && record.failures === 0)) return null;
  return {
    record: {
      ...record,
      state: "closed",
      failures: 0,
      opened_at: null,
      until: null,
      opens: 0,
      probe: null,
      updated_at: now,
    },
    change: record.state === "open" ? "closed" : "counted",
  };
}

/**
 * A call failed in a way that says the model is unwell (countsAgainstModel). Closed: one more in
 * the streak (a streak whose last failure is older than the window starts over), opening at the
 * threshold. Open: this caller's probe failed, so it opens again for a longer cool-down; a call
 * let through before it opened only adds to the count.
 */
export function afterFailure(
  record: BreakerRecord | null,
  target: Target,
  reason: string,
  now: number,
  owner: string,
  settings: BreakerSettings,
): Transition {
  const base: BreakerRecord = record ?? {
    provider: target.provider,
    model: target.model,
    state: "closed",
    failures: 0,
    last_failure_at: null,
    reason: null,
    opened_at: null,
    until: null,
    opens: 0,
    probe: null,
    updated_at: now,
  };
  if (base.state === "open") {
    const counted = { ...base, failures: base.failures + 1, last_failure_at: now, reason, updated_at: now };
    if (base.probe?.owner !== owner) return { record: counted, change: "counted" };
    const opens = base.opens + 1;
    return {
      record: { ...counted, opened_at: now, until: now + cooldownFor(opens, settings), opens, probe: null },
      change: "reopened",
    };
  }
  const inStreak = base.last_failure_at !== null && now - base.last_failure_at <= settings.window_ms;
  const failures = inStreak ? base.failures + 1 : 1;
  const counted = { ...base, failures, last_failure_at: now, reason, updated_at: now };
  if (failures < settings.failures) return { record: counted, change: "counted" };
  return {
    record: {
      ...counted,
      state: "open",
      opened_at: now,
      until: now + cooldownFor(1, settings),
      opens: 1,
      probe: null,
    },
    change: "opened",
  };
}

/** A probe's call told nothing of the model (a 400, a rate limit, an abort): free the probe for the next call. */
export function afterNeutral(record: BreakerRecord | null, owner: string, now: number): Transition | null {
  if (record === null || record.probe?.owner !== owner) return null;
  return { record: { ...record, probe: null, updated_at: now }, change: "released" };
}
