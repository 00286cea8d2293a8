// What Tenax knows of each provider's health, and the rules that turn it into a state. The facts
// are one small durable record per provider (kind "component", key "provider/NAME": the last
// call's outcome, the last background probe's, when a call last succeeded, since when calls fail),
// written by every process that calls the provider (provider-health.ts) and read by `tenax status`,
// the dashboard and the gateway's /health. The rules are one pure function, `judgeProviders`.
import { z } from "zod";
import type { RecordPutOp } from "../store/ops.js";
import { type ClassifiedError, ERROR_REASONS } from "./classified-error.js";
import { REASON_FLAGS } from "./classify-rules.js";

export const PROVIDER_RECORD_KIND = "component";

export function providerRecordKey(provider: string): string {
  return `provider/${provider}`;
}

const observationSchema = z.object({
  ok: z.boolean(),
  at: z.number(),
  /** The model the call asked for; null for a probe. */
  model: z.string().nullable(),
  /** The classified reason of a failure (whatever the classifier names it); null when it answered. */
  reason: z.string().nullable(),
  message: z.string().nullable(),
  /**
   * What a probe that got through showed (PROBE_SCOPES); absent for a call, a failed probe, and a
   * record written before probes said it. Any other value is read as the least, `reach`.
   */
  scope: z.string().nullish(),
});
/** One look at a provider: a call's end or a probe's answer. */
export type ProviderObservation = z.infer<typeof observationSchema>;

// Not strict: a record written by a newer Tenax may carry more, and is still read.
export const providerRecordSchema = z.object({
  last_call: observationSchema.nullable(),
  last_probe: observationSchema.nullable(),
  /** The last call that succeeded (probes do not count: reaching a host is not answering a call). */
  last_success_at: z.number().nullable(),
  /** When the calls' present failing streak began; null while the last call succeeded. */
  failing_since: z.number().nullable(),
});
export type ProviderRecord = z.infer<typeof providerRecordSchema>;

export const EMPTY_RECORD: ProviderRecord = {
  last_call: null,
  last_probe: null,
  last_success_at: null,
  failing_since: null,
};

/** What reads records: the writer's Store or a read-only StoreReader. */
export interface RecordSource {
  getRecord<T = unknown>(kind: string, key: string): Promise<T | null>;
}

/** A provider's record as stored; null when there is none or it cannot be read as one. */
export async function readProviderRecord(
  source: RecordSource,
  provider: string,
): Promise<ProviderRecord | null> {
  return parseProviderRecord(await source.getRecord(PROVIDER_RECORD_KIND, providerRecordKey(provider)));
}

export function parseProviderRecord(value: unknown): ProviderRecord | null {
  const parsed = providerRecordSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

export function providerRecordOp(provider: string, record: ProviderRecord, now: number): RecordPutOp {
  return {
    op: "record.put",
    kind: PROVIDER_RECORD_KIND,
    key: providerRecordKey(provider),
    session_id: null,
    value: JSON.stringify(record),
    updated_at: now,
  };
}

/**
 * Whether a failed call says something about the provider: the classifier's own flag that another
 * model may succeed where this one did not. A request-shaped failure (a context overflow, a
 * request no model takes, a replayed thinking signature) and our own abort say nothing of it, so
 * they change neither way; every reason the classifier marks for fallback counts, whatever it is.
 */
export function countsAgainstProvider(error: Pick<ClassifiedError, "reason" | "fallback">): boolean {
  return error.fallback && error.reason !== "aborted";
}

/**
 * Whether a failed probe says something about the provider: not when its reason is one no call would
 * count either (the prober's own process out of file descriptors reached no provider).
 */
export function probeCountsAgainstProvider(observation: Pick<ProviderObservation, "ok" | "reason">): boolean {
  if (observation.ok) return true;
  const reason = ERROR_REASONS.find((r) => r === observation.reason);
  return reason === undefined || countsAgainstProvider({ reason, ...REASON_FLAGS[reason] });
}

/** A record with one more observation; an observation older than the one it would replace is ignored. */
export function withObservation(
  record: ProviderRecord | null,
  source: "call" | "probe",
  observation: ProviderObservation,
): ProviderRecord {
  const base = record ?? EMPTY_RECORD;
  // Spelt out, not spread: this runs once per model call, and a spread costs about a microsecond.
  if (source === "probe") {
    if (base.last_probe !== null && base.last_probe.at > observation.at) return base;
    return {
      last_call: base.last_call,
      last_probe: observation,
      last_success_at: base.last_success_at,
      failing_since: base.failing_since,
    };
  }
  if (base.last_call !== null && base.last_call.at > observation.at) return base;
  if (observation.ok)
    return {
      last_call: observation,
      last_probe: base.last_probe,
      last_success_at: observation.at,
      failing_since: null,
    };
  const streak = base.last_call !== null && !base.last_call.ok ? base.failing_since : null;
  return {
    last_call: observation,
    last_probe: base.last_probe,
    last_success_at: base.last_success_at,
    failing_since: streak ?? observation.at,
  };
}

/** Two views of one provider (this process's and the store's, or the gateway's): the newest of each fact. */
export function mergeRecords(a: ProviderRecord | null, b: ProviderRecord | null): ProviderRecord | null {
  if (a === null) return b;
  if (b === null) return a;
  const last_call = newest(a.last_call, b.last_call);
  const last_success_at = latest(a.last_success_at, b.last_success_at);
  let failing_since: number | null = null;
  if (last_call !== null && !last_call.ok) {
    // The streak began at the earliest failure either side saw after the last success anyone saw.
    const starts = [a.failing_since, b.failing_since, last_call.at].filter(
      (t): t is number => t !== null && (last_success_at === null || t > last_success_at),
    );
    failing_since = Math.min(...starts);
  }
  return { last_call, last_probe: newest(a.last_probe, b.last_probe), last_success_at, failing_since };
}

function newest(a: ProviderObservation | null, b: ProviderObservation | null): ProviderObservation | null {
  if (a === null) return b;
  if (b === null) return a;
  return b.at >= a.at ? b : a;
}

function latest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

/**
 * What a probe that got through shows, from the least to the most: `reach`, the host took a TCP
 * connection (a `connect` probe, or a `models` probe whose server has no model list, 404 or 405);
 * `api`, its model list answered and no key was sent (a server that needs none); `key`, its model
 * list answered with the key the pool offers a call next.
 */
export const PROBE_SCOPES = ["reach", "api", "key"] as const;
export type ProbeScope = (typeof PROBE_SCOPES)[number];

/**
 * Which failures of a call a probe that got through sees are over, by what it showed. A reason
 * not listed is one no probe can see (a missing model, a permission for one model or region,
 * billing: listing models costs nothing and answers with no credit left, a stream cut or garbled
 * mid-reply, a content block, a failure nobody could name): it stands until a call succeeds.
 * A `timeout` is most often a host that took no connection in time; one that waited on a hung
 * server's first byte and is cleared by a connect shows again at the next call.
 */
const SEEN_BY_PROBE: Readonly<Record<ProbeScope, ReadonlySet<string>>> = {
  reach: new Set(["unreachable", "timeout"]),
  api: new Set(["unreachable", "timeout", "server_error", "overloaded"]),
  // The pool offers no key it saw refused or limited until it may be used again: a key it offers
  // and the provider takes is the key the next call sends.
  key: new Set(["unreachable", "timeout", "server_error", "overloaded", "auth", "rate_limit"]),
};

export function probeScope(observation: Pick<ProviderObservation, "scope">): ProbeScope {
  const scope = observation.scope;
  return scope === "api" || scope === "key" ? scope : "reach";
}

/** Whether a probe that got through shows a failure of this reason to be over. */
export function probeSees(probe: Pick<ProviderObservation, "scope">, reason: string | null): boolean {
  return reason !== null && SEEN_BY_PROBE[probeScope(probe)].has(reason);
}

/** A failed call, and the newer probe that got through and sees its kind: the call no longer counts. */
export function clearedByProbe(
  record: ProviderRecord | null,
): { call: ProviderObservation; probe: ProviderObservation } | null {
  const call = record?.last_call ?? null;
  const probe = record?.last_probe ?? null;
  if (call === null || call.ok || probe === null || !probe.ok || probe.at <= call.at) return null;
  return probeSees(probe, call.reason) ? { call, probe } : null;
}

/** The failure a provider is judged by now, and whether a call or the probe saw it; null when none. */
export function currentFailure(
  record: ProviderRecord | null,
): { observation: ProviderObservation; source: "call" | "probe" } | null {
  if (record === null) return null;
  const { last_call, last_probe } = record;
  // A failed call stands until a call succeeds, or a newer probe gets through that can see its
  // kind of failure (clearedByProbe): reaching the host says nothing of a missing model.
  if (last_call !== null && !last_call.ok && clearedByProbe(record) === null)
    return { observation: last_call, source: "call" };
  if (last_probe !== null && !last_probe.ok && (last_call === null || last_probe.at >= last_call.at))
    return { observation: last_probe, source: "probe" };
  return null;
}

/** ok: seen answering (or runs in this process); failing: its latest word is a failure; unknown: never seen. */
export type ProviderCondition = "ok" | "failing" | "unknown";

export function providerCondition(record: ProviderRecord | null, inProcess: boolean): ProviderCondition {
  if (currentFailure(record) !== null) return "failing";
  if (record?.last_call?.ok || record?.last_probe?.ok) return "ok";
  return inProcess ? "ok" : "unknown";
}

export type ProviderLevel = "ok" | "unknown" | "degraded" | "down";

export interface ProviderFacts {
  provider: string;
  /** An in-process simulator answers from inside whichever process calls it: ok without a probe. */
  in_process: boolean;
  record: ProviderRecord | null;
}

export interface ProviderJudgement {
  provider: string;
  status: ProviderLevel;
  condition: ProviderCondition;
  in_chain: boolean;
  failure: { observation: ProviderObservation; source: "call" | "probe" } | null;
  /** A failed call a newer probe showed to be over (clearedByProbe); null when none. */
  cleared: { call: ProviderObservation; probe: ProviderObservation } | null;
}

/**
 * The rules, in one place. Each provider's condition comes from its latest word (providerCondition):
 * a failed call, unless a newer probe got through that sees its kind (clearedByProbe), or a failed
 * probe newer than the last call.
 * A failing provider is `down` when no provider of the primary-and-fallback chain is left that may
 * answer (every one of them is failing), else `degraded`; one that may answer is `ok` or `unknown`.
 * The whole: `down` when every chain provider fails, `degraded` when any provider fails, `unknown`
 * when the primary's provider has never been seen answering, else `ok`. An unknown fallback does not
 * make the whole unknown: the primary answers, and a fallback is seen when it is needed.
 */
export function judgeProviders(
  facts: readonly ProviderFacts[],
  chain: readonly string[],
): { status: ProviderLevel; providers: ProviderJudgement[] } {
  const conditions = new Map(facts.map((f) => [f.provider, providerCondition(f.record, f.in_process)]));
  const inChain = [...new Set(chain)].filter((p) => conditions.has(p));
  const chainAnswers = inChain.some((p) => conditions.get(p) !== "failing");
  const providers = facts.map((f): ProviderJudgement => {
    const condition = conditions.get(f.provider) ?? "unknown";
    const status: ProviderLevel = condition === "failing" ? (chainAnswers ? "degraded" : "down") : condition;
    return {
      provider: f.provider,
      status,
      condition,
      in_chain: inChain.includes(f.provider),
      failure: currentFailure(f.record),
      cleared: clearedByProbe(f.record),
    };
  });
  const primary = inChain[0];
  const status: ProviderLevel =
    inChain.length > 0 && !chainAnswers
      ? "down"
      : providers.some((p) => p.condition === "failing")
        ? "degraded"
        : primary !== undefined && conditions.get(primary) === "unknown"
          ? "unknown"
          : "ok";
  return { status, providers };
}
