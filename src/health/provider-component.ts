// The providers layer as one component, for `tenax status`, the dashboard and the gateway's /health
// alike: each configured provider with its state (ok, unknown, degraded, down, by the rules of
// llm/provider-state.ts), its last error (classified reason, message, when, call or probe) and the
// command to run next, from whatever records the caller has (the store's, the gateway's live view).

import type { ProviderType, TenaxConfig } from "../config/schema.js";
import { usesBuiltInSimulator } from "../config/schema.js";
import type { BreakerRecord } from "../llm/breaker-state.js";
import {
  judgeProviders,
  type ProviderJudgement,
  type ProviderLevel,
  type ProviderRecord,
  probeScope,
  probeSees,
} from "../llm/provider-state.js";
import { BUILT_IN_TARGET, DEFAULT_BASE_URLS } from "../llm/runtime.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import { chainAnswers, chainTargets, describeCircuit, type ModelCircuit, modelCircuits } from "./circuits.js";
import { formatDuration } from "./duration.js";
import { modelsUrl, type ProviderProbeMode } from "./provider-probe.js";

export interface ProviderLastError {
  reason: string;
  message: string | null;
  at: number;
  model: string | null;
  /** Whether a call failed or the background probe could not reach it. */
  source: "call" | "probe";
}

/** One provider as every view shows it; the record's own fields are kept so views can be merged. */
export interface ProviderHealth extends ProviderRecord {
  provider: string;
  type: ProviderType;
  base_url: string | null;
  in_process: boolean;
  in_chain: boolean;
  status: ProviderLevel;
  detail: string;
  last_error: ProviderLastError | null;
  next: string | null;
}

export interface ProvidersComponent {
  status: ProviderLevel;
  detail: string;
  /** The detail without each provider's own line (which `providers` holds), for a tile's headline. */
  summary: string;
  next: string | null;
  primary: string;
  fallback: string[];
  built_in_simulator: boolean;
  probe: ProviderProbeMode;
  providers: ProviderHealth[];
  /** Each model's circuit breaker: `{provider, model, circuit}` and why and until when. */
  models: ModelCircuit[];
}

export interface ConfiguredProvider {
  provider: string;
  type: ProviderType;
  base_url: string | null;
  in_process: boolean;
}

/** The providers a profile calls: its configured ones, or the built-in simulator. */
export function configuredProviders(config: TenaxConfig): ConfiguredProvider[] {
  if (usesBuiltInSimulator(config))
    return [{ provider: BUILT_IN_TARGET.provider, type: "simulator", base_url: null, in_process: true }];
  return Object.entries(config.providers).map(([provider, p]) => ({
    provider,
    type: p.type,
    base_url: p.base_url ?? (p.type === "simulator" ? null : DEFAULT_BASE_URLS[p.type]),
    in_process: p.type === "simulator" && p.base_url === undefined,
  }));
}

export function providersComponent(
  paths: ProfilePaths,
  config: TenaxConfig,
  records: ReadonlyMap<string, ProviderRecord | null>,
  now: number,
  breakers: readonly BreakerRecord[] = [],
): ProvidersComponent {
  const builtIn = usesBuiltInSimulator(config);
  const primaryTarget = config.model ?? { provider: BUILT_IN_TARGET.provider, name: BUILT_IN_TARGET.model };
  const primary = `${primaryTarget.provider}/${primaryTarget.name}`;
  const fallback = config.fallback.map((t) => `${t.provider}/${t.name}`);
  const configured = configuredProviders(config);
  const chain = [primaryTarget, ...config.fallback].map((t) => t.provider);
  const judged = judgeProviders(
    configured.map((c) => ({
      provider: c.provider,
      in_process: c.in_process,
      record: records.get(c.provider) ?? null,
    })),
    chain,
  );
  const mode = config.health.provider_probe;
  const providers = configured.map((c, i): ProviderHealth => {
    const judgement = judged.providers[i] as ProviderJudgement;
    const record = records.get(c.provider) ?? null;
    return describeProvider(paths, config, c, judgement, record, now, mode, judged.status === "down");
  });
  const failing = providers.filter((p) => p.last_error !== null);
  const states = providers.map(
    (p) =>
      `${p.provider} (${p.type}${p.base_url ? `, ${p.base_url}` : p.in_process ? ", in-process" : ""}): ${p.status}, ${p.detail}`,
  );
  const route = builtIn
    ? "none configured: the built-in local simulator answers (set model and providers in config.yaml for a real one)"
    : `primary ${primary}${fallback.length > 0 ? `, fallback ${fallback.join(" then ")}` : ", no fallback"}`;
  const head =
    judged.status === "down"
      ? "no model of the primary-and-fallback chain answers: "
      : judged.status === "degraded"
        ? `${failing.map((p) => p.provider).join(", ")} failing, the rest of the chain still answers: `
        : "";
  // The built-in simulator's line stays as it was while it answers: nothing more to say of it.
  const detail = builtIn && judged.status === "ok" ? route : `${head}${route}; ${states.join("; ")}`;
  const summary = `${head}${route}`;
  const first = failing.find((p) => p.in_chain) ?? failing[0];
  const circuits = circuitsPart(paths, config, judged, breakers, now);
  return {
    status: circuits.status ?? judged.status,
    detail: circuits.said ? `${detail}; ${circuits.said}` : detail,
    summary: circuits.said ? `${summary}; ${circuits.said}` : summary,
    next: first?.next ?? circuits.next,
    primary,
    fallback,
    built_in_simulator: builtIn,
    probe: mode,
    providers,
    models: circuits.models,
  };
}

/**
 * What the circuits add: an open or half-open one makes the providers degraded, and down when no
 * model of the chain may answer (each is open or its provider failing); said in words, with what to do.
 */
function circuitsPart(
  paths: ProfilePaths,
  config: TenaxConfig,
  judged: ReturnType<typeof judgeProviders>,
  breakers: readonly BreakerRecord[],
  now: number,
): { models: ModelCircuit[]; status: ProviderLevel | null; said: string; next: string | null } {
  const models = modelCircuits(config, breakers, now);
  const tripped = models.filter((m) => m.circuit !== "closed");
  if (tripped.length === 0) return { models, status: null, said: "", next: null };
  const failing = (provider: string) =>
    judged.providers.find((j) => j.provider === provider)?.condition === "failing";
  const chain = chainTargets(config);
  const status: ProviderLevel =
    judged.status === "down" || (chain.length > 0 && !chainAnswers(chain, models, failing))
      ? "down"
      : "degraded";
  return {
    models,
    status,
    said: tripped.map((c) => describeCircuit(c, now)).join("; "),
    next: `an open circuit lets one probe call through when its cool-down ends (breaker: in ${paths.config}), and its success closes it; a fallback model (fallback:) answers meanwhile; ${tenaxCommand(paths.name, ["status"])} shows each circuit`,
  };
}

function describeProvider(
  paths: ProfilePaths,
  config: TenaxConfig,
  c: ConfiguredProvider,
  judgement: ProviderJudgement,
  record: ProviderRecord | null,
  now: number,
  mode: ProviderProbeMode,
  chainDown: boolean,
): ProviderHealth {
  const ago = (t: number) => `${formatDuration(Math.max(0, now - t))} ago`;
  const facts: ProviderRecord = record ?? {
    last_call: null,
    last_probe: null,
    last_success_at: null,
    failing_since: null,
  };
  const failure = judgement.failure;
  const base = {
    ...facts,
    provider: c.provider,
    type: c.type,
    base_url: c.base_url,
    in_process: c.in_process,
    in_chain: judgement.in_chain,
    status: judgement.status,
  };
  if (failure !== null) {
    const { observation: o, source } = failure;
    const reason = o.reason ?? "unknown";
    const what =
      source === "call"
        ? `a call${o.model ? ` to ${o.model}` : ""} failed ${ago(o.at)}: ${reason}${o.message ? ` (${o.message})` : ""}${
            facts.failing_since !== null && facts.failing_since < o.at
              ? `; calls fail since ${ago(facts.failing_since)}`
              : ""
          }`
        : `the ${mode === "off" ? "" : `${mode} `}probe ${ago(o.at)} could not reach it: ${reason}${o.message ? ` (${o.message})` : ""}`;
    // A newer probe got through, but cannot see this kind of failure (probeSees): it stands.
    const reached =
      source === "call" && facts.last_probe?.ok === true && facts.last_probe.at > o.at
        ? `; the probe reached it ${ago(facts.last_probe.at)}, which does not show a failure of this kind (${reason}) to be over, so it stands`
        : "";
    return {
      ...base,
      detail: `${what}${reached}`,
      last_error: { reason, message: o.message, at: o.at, model: o.model, source },
      next: nextFor(paths, config, c, o.model, chainDown, clearedBy(mode, source, o.reason)),
    };
  }
  if (judgement.cleared !== null) {
    const { call, probe } = judgement.cleared;
    const got =
      probeScope(probe) === "reach"
        ? "reached it"
        : `had its model list answer${probeScope(probe) === "key" ? " the key" : ""}`;
    return {
      ...base,
      detail: `the probe ${got} ${ago(probe.at)}, since the failed call${call.model ? ` to ${call.model}` : ""} at ${new Date(call.at).toISOString()} (${ago(call.at)}: ${call.reason ?? "unknown"}${call.message ? `, ${call.message}` : ""}); a probe sees that kind of failure, so the call counts no more (the next call will tell)`,
      last_error: null,
      next: null,
    };
  }
  let detail: string;
  if (facts.last_call?.ok && (facts.last_probe === null || facts.last_call.at >= facts.last_probe.at))
    detail = `answered a call ${ago(facts.last_call.at)}`;
  else if (facts.last_probe?.ok)
    detail = `reached by the probe ${ago(facts.last_probe.at)}${facts.last_call?.ok ? `; answered a call ${ago(facts.last_call.at)}` : ", not called yet"}`;
  else if (c.in_process) detail = "answers in-process";
  else
    detail =
      mode === "off"
        ? "not called yet, and the background probe is off (health.provider_probe: off): unknown until a call"
        : "not called yet, and the background probe has not reached it yet";
  return { ...base, detail, last_error: null, next: null };
}

/** What clears a failure: a call that succeeds, and a probe that gets through where it can see the kind. */
function clearedBy(mode: ProviderProbeMode, source: "call" | "probe", reason: string | null): string {
  if (source === "probe") return "the next call or probe that gets through clears it";
  if (mode === "off") return "the next call that succeeds clears it";
  // A `models` probe with no usable key is a connect, which sees less.
  const seen = probeSees({ scope: mode === "models" ? "key" : "reach" }, reason);
  return seen
    ? "the next call that succeeds, or probe that gets through, clears it"
    : `the next call that succeeds clears it, since the ${mode} probe (health.provider_probe) cannot see a failure of this kind (${reason ?? "unknown"})`;
}

/** What to check, and what clears it: a call that succeeds, or for some failures the probe. */
function nextFor(
  paths: ProfilePaths,
  config: TenaxConfig,
  c: ConfiguredProvider,
  model: string | null,
  chainDown: boolean,
  clears: string,
): string {
  const status = tenaxCommand(paths.name, ["status"]);
  const check =
    c.base_url === null
      ? `the in-process simulator ${c.provider} fails as its script in ${paths.config} says`
      : `check that ${c.provider} at ${c.base_url} is up${model ? ` and serves ${model}` : ""} (curl -sS ${modelsUrl(c.type, c.base_url)}) and providers.${c.provider} in ${paths.config}`;
  const fallback =
    chainDown && config.fallback.length === 0
      ? "; a fallback model (fallback: in config.yaml) would answer while it is down"
      : "";
  return `${check}${fallback}; ${clears}; ${status} shows it`;
}
