// One model call made resilient, for one provider and model: a slot from the provider's
// concurrency limit, a usable key from its pool, the stream, and on failure the pool's verdict
// (rotate to the next key at once) or the retry policy's (wait, then try again). Fallback to
// another model is the router's business, not this one's.
import type { Deps } from "../core/deps.js";
import type { BreakerPass, CircuitBreakers } from "./breaker.js";
import { circuitOpenError } from "./circuit-open.js";
import {
  type ClassifiedError,
  ERROR_REASONS,
  type ErrorReason,
  ProviderError,
  terminalClassified,
} from "./classified-error.js";
import type { ConcurrencyLimiter } from "./concurrency.js";
import type { CredentialPool, PickedKey } from "./credential-pool.js";
import { keyRequiredError } from "./key-required.js";
import type { ChatRequest, Provider, ToolCall, Usage } from "./provider.js";
import { withRetry } from "./retry.js";
import type { RouteListener, Target } from "./route-events.js";
import { ToldReply } from "./told-reply.js";

export interface ModelLimits {
  context_window: number;
  max_output_tokens: number;
}

/** Everything one configured provider needs at call time. */
export interface ProviderRuntime {
  name: string;
  provider: Provider;
  pool: CredentialPool;
  /** Where it is called (the base URL), for the messages that must name the server. */
  base_url: string;
  limiter: ConcurrencyLimiter;
  /** Known model limits; a model not listed has an unknown window. */
  models: Readonly<Record<string, ModelLimits>>;
  /** The provider's type (openai, anthropic, simulator), for traces (gen_ai.provider.name). */
  system?: string;
}

export interface Completion {
  text: string;
  tool_calls: ToolCall[];
  /** The provider's own finish reason, unchanged. */
  finish_reason: string;
  usage: Usage | null;
  /** Every token's log probabilities, when the request asked and the provider gave them. */
  logprobs?: unknown[];
  provider: string;
  model: string;
  /** Attempts at the retry layer (key rotations inside one attempt do not count). */
  attempts: number;
}

export interface CallSettings {
  deps: Deps;
  maxAttempts: number;
  maxRetryAfterMs?: number;
  /** The models' circuit breakers; none: every attempt goes. */
  breaker?: CircuitBreakers;
}

const NO_BREAKER: BreakerPass = { decision: "closed" };

export interface CallOptions {
  signal?: AbortSignal;
  onEvent: RouteListener;
  /** The request's estimated size, for events. */
  contextTokens: number | null;
  /**
   * What the listener has been told of the reply, shared with the other targets of the same call
   * (the fallback chain); a new one, for a listener that can take text back, when not given.
   */
  told?: ToldReply;
}

/** Calls one target until it answers or the retry layer gives up; rejects with a ProviderError. */
export async function callTarget(
  runtime: ProviderRuntime,
  target: Target,
  request: Omit<ChatRequest, "model">,
  settings: CallSettings,
  options: CallOptions,
): Promise<Completion> {
  const { deps } = settings;
  const emit = options.onEvent;
  const told = options.told ?? new ToldReply(false);
  let attempts = 0;
  // Why the last attempt failed, when it had told the listener part of the reply.
  let restartReason: ErrorReason | null = null;

  const attempt = async (attemptNo: number, signal: AbortSignal | undefined): Promise<Completion> => {
    attempts = attemptNo;
    // Each key is rotated away from at most once per attempt, so this loop is bounded by the pool.
    for (let rotations = 0; ; rotations++) {
      // An open circuit sends nothing, before any wait for a slot: the router moves on at once.
      const breaker = settings.breaker;
      const pass = breaker ? await breaker.admit(target, emit) : NO_BREAKER;
      if (pass.decision === "open") throw circuitOpenError(target, pass, deps.clock.now());
      let key: PickedKey | null = null;
      let outcome: StreamOutcome | null = null;
      let sentAt = 0;
      try {
        const release = await runtime.limiter.acquire(signal);
        try {
          key = await runtime.pool.pick(deps.clock.now(), target.model);
          if (key === null) throw await exhausted(runtime, target, deps.clock.now(), emit);
          const dropped = told.begin();
          if (restartReason !== null) {
            emit({
              ...restartEvent(target, restartReason, dropped, told.appendOnly),
              attempt: attemptNo,
              max_attempts: settings.maxAttempts,
            });
            restartReason = null;
          }
          sentAt = deps.clock.now();
          outcome = await streamOnce(
            runtime.provider,
            { ...request, model: target.model },
            key.key,
            signal,
            told,
            emit,
          );
        } finally {
          release();
        }
      } finally {
        // What the request said of the model; nothing when none was sent or it was aborted.
        if (breaker)
          await breaker.report(
            target,
            pass,
            outcome === null || (!outcome.ok && outcome.error.reason === "aborted")
              ? null
              : outcome.ok
                ? { ok: true }
                : { ok: false, error: outcome.error },
            emit,
          );
      }
      if (outcome.ok) {
        await runtime.pool.reportSuccess(key, deps.clock.now(), sentAt, target.model);
        return { ...outcome.completion, provider: target.provider, model: target.model, attempts };
      }
      const classified = outcome.error;
      // Nothing of this is the key's or the provider's to answer for, and no attempt can undo it.
      if (classified.reason === "reply_diverged")
        throw new ProviderError(classified, target.provider, target.model);
      if (told.any) restartReason = classified.reason;
      if (classified.reason === "aborted") throw new ProviderError(classified, target.provider, target.model);
      const verdict = await runtime.pool.report(key.fingerprint, classified, deps.clock.now(), target.model);
      if (verdict === "key_required") throw keyRequiredError(classified, target, runtime.base_url);
      if ((verdict === "cooled" || verdict === "disabled") && rotations < runtime.pool.size) {
        const keys = await runtime.pool.state(deps.clock.now(), target.model);
        const state = keys.find((k) => k.fingerprint === key.fingerprint);
        // Said here, from the same read, so a listener knows at once whether this is a rotation
        // or the start of "every key is cooling" (one line for the user, not two).
        const next = keys.find((k) => k.status === "ok")?.fingerprint ?? null;
        const forModel = classified.reason === "rate_limit" && classified.model_named === true;
        emit({
          type: "credential_rotated",
          layer: "credentials",
          provider: target.provider,
          model: target.model,
          from: key.fingerprint,
          keyed: runtime.pool.keyed,
          reason: classified.reason,
          status: classified.status,
          verdict,
          cooldown_until: state?.cooldown_until ?? null,
          cooldown_ms:
            state?.cooldown_until == null ? null : Math.max(0, state.cooldown_until - deps.clock.now()),
          attempt: attemptNo,
          max_attempts: settings.maxAttempts,
          next_key: next,
          message: runtime.pool.keyed
            ? `${target.provider}: key ${key.fingerprint} ${
                verdict === "disabled" ? "disabled" : "cooling down"
              }${forModel ? ` for ${target.model} only (the provider's error named it)` : ""} after ${classified.reason}; ${
                next === null
                  ? "no other key is usable"
                  : next === key.fingerprint
                    ? "its cooldown is over, so it is tried again"
                    : `next key ${next}`
              }`
            : // A provider that needs no key has one pseudo-key, never disabled: the server cools down.
              `${target.provider} (it needs no key) is cooling down after ${classified.reason}; ${
                next === null ? "it is called again when the cooldown ends" : "its cooldown is over"
              }`,
        });
        continue;
      }
      throw new ProviderError(classified, target.provider, target.model);
    }
  };

  return withRetry(attempt, {
    deps,
    maxAttempts: settings.maxAttempts,
    ...(settings.maxRetryAfterMs === undefined ? {} : { maxRetryAfterMs: settings.maxRetryAfterMs }),
    ...(options.signal ? { signal: options.signal } : {}),
    // attempt() only ever rejects with a ProviderError, a limiter abort, or a ledger failure.
    classify: (error) => unexpected(error),
    onEvent: (event) => emit({ ...event, layer: "retry" }),
    context: { provider: target.provider, model: target.model, context_tokens: options.contextTokens },
  });
}

type StreamOutcome =
  | { ok: true; completion: Omit<Completion, "provider" | "model" | "attempts"> }
  | { ok: false; error: ClassifiedError };

/** The event that tells the listener a new attempt starts after part of the reply reached it. */
function restartEvent(target: Target, reason: ErrorReason, dropped: number, appendOnly: boolean) {
  const name = `${target.provider}/${target.model}`;
  return {
    type: "stream_restart" as const,
    layer: "retry" as const,
    provider: target.provider,
    model: target.model,
    reason,
    discard_chars: dropped,
    message: appendOnly
      ? `${name}: trying again; what was already sent stays, and the new attempt goes on only if it says the same first`
      : `${name}: the reply so far is dropped; trying again from the start`,
  };
}

/**
 * One attempt's stream, its reply passed to the listener through what it has been told (a new
 * attempt may only go on from it, for an append-only listener). Leaving the loop early (a reply
 * that says something else) ends the provider's request.
 */
async function streamOnce(
  provider: Provider,
  request: ChatRequest,
  apiKey: string,
  signal: AbortSignal | undefined,
  told: ToldReply,
  forward: RouteListener,
): Promise<StreamOutcome> {
  for await (const event of provider.stream(request, signal ? { apiKey, signal } : { apiKey })) {
    switch (event.type) {
      case "done": {
        const settled = told.settle({
          text: event.text,
          tool_calls: event.tool_calls,
          finish_reason: event.finish_reason,
          usage: event.usage,
          ...(event.logprobs ? { logprobs: event.logprobs } : {}),
        });
        if ("diverged" in settled) return { ok: false, error: settled.diverged };
        return { ok: true, completion: settled };
      }
      case "error":
        return { ok: false, error: event.error };
      case "text":
      case "tool_call":
      case "tool_call_delta":
      case "logprobs":
      case "usage": {
        const passed = told.pass(event);
        if ("diverged" in passed) return { ok: false, error: passed.diverged };
        if (passed.event !== null) forward(passed.event);
        break;
      }
      default: {
        const unhandled: never = event;
        return unhandled;
      }
    }
  }
  // The Provider contract promises a final event; a provider that broke it is a bug, said plainly.
  return {
    ok: false,
    error: terminalClassified("unknown", "the provider's stream ended without done or error"),
  };
}

/** Every key of the pool is cooling or disabled: say so, and fail in a way the retry layer can read. */
async function exhausted(
  runtime: ProviderRuntime,
  target: Target,
  now: number,
  emit: RouteListener,
): Promise<ProviderError> {
  const keys = await runtime.pool.state(now, target.model);
  const cooling = keys
    .filter((k) => k.status === "cooling" && k.cooldown_until !== null)
    .sort((a, b) => (a.cooldown_until ?? 0) - (b.cooldown_until ?? 0));
  const soonest = cooling[0];
  const recorded = soonest?.reason ?? keys.find((k) => k.status === "disabled")?.reason ?? null;
  const reason = asReason(recorded, soonest ? "rate_limit" : "auth");
  const nextAt = soonest?.cooldown_until ?? null;
  const wait = `${Math.max(0, (nextAt ?? now) - now)} ms`;
  // A provider that needs no key has none to rotate: the server itself is cooling down.
  const message = !runtime.pool.keyed
    ? `${target.provider} (it needs no key) is cooling down (${reason}); it is called again in ${wait}`
    : nextAt === null
      ? `every key of ${target.provider} is disabled (${reason}); replace the key in config.yaml`
      : `every key of ${target.provider} is cooling down (${reason}); the first is usable again in ${wait}`;
  emit({
    type: "credentials_exhausted",
    layer: "credentials",
    provider: target.provider,
    model: target.model,
    reason,
    next_usable_at: nextAt,
    keyed: runtime.pool.keyed,
    message,
  });
  const classified: ClassifiedError = {
    reason,
    // Waiting for the first cooldown to end is a retry like any provider-requested delay: the
    // retry layer sleeps through it when short, and gives up (so the router falls back) when not.
    retryable: nextAt !== null,
    rotate_credential: false,
    fallback: true,
    compress: false,
    retry_after_ms: nextAt === null ? null : Math.max(0, nextAt - now),
    status: null,
    message,
  };
  const error = new ProviderError(classified, target.provider, target.model);
  error.data.layer = "credentials";
  return error;
}

function asReason(value: string | null, otherwise: ErrorReason): ErrorReason {
  return ERROR_REASONS.find((r) => r === value) ?? otherwise;
}

/** A failure that was not a provider's: a bug or the ledger failing. Never retried. */
function unexpected(error: unknown): ClassifiedError {
  return terminalClassified("unknown", error instanceof Error ? error.message : String(error));
}
