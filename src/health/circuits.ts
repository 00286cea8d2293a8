// Each model's circuit breaker as health tells it: one entry per model of the primary, fallback
// and auxiliary chains (and any other model a breaker record names), `{provider, model, circuit}`
// with why and until when, and what the circuits do to the providers' level: an open circuit is a
// degraded provider, and the chain is down only when none of its models can answer.
import type { TenaxConfig } from "../config/schema.js";
import { usesBuiltInSimulator } from "../config/schema.js";
import { circuitsOf, type ModelCircuit } from "../llm/breaker.js";
import { BREAKER_RECORD_KIND, type BreakerRecord, parseBreakerRecord } from "../llm/breaker-state.js";
import type { Target } from "../llm/route-events.js";
import { BUILT_IN_TARGET } from "../llm/runtime.js";

export type { ModelCircuit };

/** What reads breaker records: the writer's Store or a read-only StoreReader. */
export interface BreakerRecordSource {
  listRecords<T = unknown>(kind: string): Promise<Array<{ value: T }>>;
}

/** The breaker records a store holds; none when it cannot be read (the store component says why). */
export async function readBreakerRecords(source: BreakerRecordSource | null): Promise<BreakerRecord[]> {
  if (source === null) return [];
  try {
    return (await source.listRecords(BREAKER_RECORD_KIND)).flatMap((r) => parseBreakerRecord(r.value) ?? []);
  } catch {
    return [];
  }
}

/** The primary and fallback models, in order: the chain a turn walks. */
export function chainTargets(config: TenaxConfig): Target[] {
  if (usesBuiltInSimulator(config)) return [BUILT_IN_TARGET];
  const primary = config.model ? [{ provider: config.model.provider, model: config.model.name }] : [];
  return [...primary, ...config.fallback.map((t) => ({ provider: t.provider, model: t.name }))];
}

function auxiliaryTargets(config: TenaxConfig): Target[] {
  return Object.values(config.auxiliary).flatMap((a) =>
    a ? [a, ...a.fallback].map((t) => ({ provider: t.provider, model: t.name })) : [],
  );
}

/** Every configured model's circuit, and those of other models of configured providers with a record. */
export function modelCircuits(
  config: TenaxConfig,
  records: readonly BreakerRecord[],
  now: number,
): ModelCircuit[] {
  const providers = new Set(
    usesBuiltInSimulator(config) ? [BUILT_IN_TARGET.provider] : Object.keys(config.providers),
  );
  const known = records.filter((r) => providers.has(r.provider));
  return circuitsOf(known, [...chainTargets(config), ...auxiliaryTargets(config)], now);
}

/** A circuit that is not closed, in words. */
export function describeCircuit(c: ModelCircuit, now: number): string {
  const why = `${c.failures} failure${c.failures === 1 ? "" : "s"}${c.reason ? `, ${c.reason}` : ""}`;
  if (c.circuit === "half_open")
    return `${c.provider}/${c.model}: circuit half-open (${why}): the next call is its one probe`;
  const left = Math.max(0, Math.ceil(((c.retry_at ?? now) - now) / 1000));
  return `${c.provider}/${c.model}: circuit open (${why}): calls skip it until ${new Date(c.retry_at ?? now).toISOString()} (${left} s), then one probe goes`;
}

/**
 * Whether some model of the chain may answer: its provider is not failing and its circuit is not
 * open (a half-open one takes its probe). An empty chain answers nothing, and says so elsewhere.
 */
export function chainAnswers(
  chain: readonly Target[],
  circuits: readonly ModelCircuit[],
  providerFailing: (provider: string) => boolean,
): boolean {
  return chain.some(
    (t) =>
      !providerFailing(t.provider) &&
      circuits.find((c) => c.provider === t.provider && c.model === t.model)?.circuit !== "open",
  );
}
