// Runs a provider call again after a classified, retryable failure: asks the policy how long to
// wait, says so in an event before it sleeps, and never retries an abort. Time and chance come
// only from the injected deps.
import type { Deps } from "../core/deps.js";
import { TenaxError } from "../core/errors.js";
import {
  type ClassifiedError,
  type ErrorReason,
  ProviderError,
  terminalClassified,
} from "./classified-error.js";
import { DEFAULT_MAX_RETRY_AFTER_MS, type GiveUpWhy, nextDelay } from "./retry-policy.js";

export interface RetryContext {
  provider: string;
  model: string;
  /** The size of the request, so the operator sees what is being retried. */
  context_tokens: number | null;
}

interface RetryEventBase {
  reason: ErrorReason;
  provider: string;
  model: string;
  /** The attempt that just failed, 1-based. */
  attempt: number;
  max_attempts: number;
  /** Since the first attempt began. */
  elapsed_ms: number;
  context_tokens: number | null;
  retry_after_ms: number | null;
  /** The HTTP status of the failure, null when there was no response (a transport failure). */
  status: number | null;
  message: string;
}

export type RetryEvent =
  | (RetryEventBase & {
      type: "retry";
      delay_ms: number;
      /** Epoch milliseconds of the next attempt. */
      next_attempt_at: number;
    })
  | (RetryEventBase & { type: "retry_exhausted"; why: GiveUpWhy });

export interface WithRetryOptions {
  signal?: AbortSignal;
  deps: Deps;
  /** Total attempts including the first (config `retry.max_attempts`). */
  maxAttempts: number;
  maxRetryAfterMs?: number;
  /** Turns anything the call threw into a classified error; a ProviderError's own is used as is. */
  classify: (error: unknown) => ClassifiedError;
  /** Called synchronously; it must not throw. */
  onEvent?: (event: RetryEvent) => void;
  context: RetryContext;
}

/**
 * Calls `call` until it resolves or the policy gives up.
 *
 * Rejections are always a ProviderError whose `data.give_up` says why it stopped:
 * - an abort (before, during the call or during the sleep) rejects at once with
 *   `classified.reason === "aborted"` and `data.give_up === "aborted"`; the abort reason is the
 *   `cause`. We wrap rather than rethrow the raw abort reason because that reason can be anything
 *   (a DOMException, a string, the caller's own error), and one shape lets the caller tell an
 *   abort from a failure by a field, never by text;
 * - otherwise it carries the last classified failure, the original error as `cause`, and
 *   `data.give_up` of "not_retryable", "attempts_spent" or "retry_after_too_long", so the
 *   pool and fallback layers know whether to rotate the key or move along the chain.
 *
 * `retry_exhausted` is emitted when it gives up on a failure that retrying was handling (the
 * budget ran out, or the provider asked for too long a wait), or on any failure after at least
 * one retry. A first-attempt failure that was never retryable emits nothing: the rejection says it.
 */
export async function withRetry<T>(
  call: (attempt: number, signal: AbortSignal | undefined) => Promise<T>,
  options: WithRetryOptions,
): Promise<T> {
  const { deps, maxAttempts, context } = options;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be an integer of 1 or more, got ${maxAttempts}`);
  }
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  // No stand-in signal when the caller gave none: nothing could fire it, and every layer below
  // would pay to listen to it (the provider joins it with its timers on every call).
  const signal = options.signal;
  const started = deps.clock.now();

  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw abortedError(context, signal.reason);
    let failure: unknown;
    try {
      return await call(attempt, signal);
    } catch (error) {
      failure = error;
    }
    if (signal?.aborted) throw abortedError(context, signal.reason);

    const classified = classifiedOf(failure, options.classify);
    const decision = nextDelay(classified, attempt, { random: deps.random, maxAttempts, maxRetryAfterMs });
    const now = deps.clock.now();
    const base: RetryEventBase = {
      reason: classified.reason,
      provider: context.provider,
      model: context.model,
      attempt,
      max_attempts: maxAttempts,
      elapsed_ms: now - started,
      context_tokens: context.context_tokens,
      retry_after_ms: classified.retry_after_ms,
      status: classified.status,
      message: classified.message,
    };

    if (decision.action === "give_up") {
      if (decision.why === "aborted") throw abortedError(context, failure);
      const gaveUpOnRetrying = decision.why !== "not_retryable" || attempt > 1;
      if (gaveUpOnRetrying) options.onEvent?.({ ...base, type: "retry_exhausted", why: decision.why });
      throw gaveUp(classified, context, decision.why, failure, attempt, base.elapsed_ms);
    }

    options.onEvent?.({
      ...base,
      type: "retry",
      delay_ms: decision.delayMs,
      next_attempt_at: now + decision.delayMs,
    });
    try {
      await deps.sleep(decision.delayMs, signal);
    } catch (error) {
      if (signal?.aborted) throw abortedError(context, signal.reason);
      throw error;
    }
  }
}

/** Why withRetry stopped, read from its rejection; null for anything else. */
export function giveUpReason(error: unknown): GiveUpWhy | null {
  if (!isProviderError(error)) return null;
  const why = error.data.give_up;
  return why === "not_retryable" ||
    why === "attempts_spent" ||
    why === "retry_after_too_long" ||
    why === "aborted"
    ? why
    : null;
}

function isProviderError(error: unknown): error is ProviderError {
  return TenaxError.isInstance(error) && error.name === "ProviderError" && "classified" in error;
}

function classifiedOf(error: unknown, classify: (error: unknown) => ClassifiedError): ClassifiedError {
  return isProviderError(error) ? error.classified : classify(error);
}

function gaveUp(
  classified: ClassifiedError,
  context: RetryContext,
  why: GiveUpWhy,
  cause: unknown,
  attempts: number,
  elapsedMs: number,
): ProviderError {
  // A failure Tenax named itself (an open circuit) keeps its own code and hint.
  const own = isProviderError(cause)
    ? { code: cause.code, ...(cause.hint === undefined ? {} : { hint: cause.hint }) }
    : {};
  const error = new ProviderError(classified, context.provider, context.model, own);
  // The layer that failed under the retries (the key pool) stays named: what gave up is told by it.
  if (isProviderError(cause) && typeof cause.data.layer === "string") error.data.layer = cause.data.layer;
  if (isProviderError(cause) && typeof cause.data.retry_at === "number")
    error.data.retry_at = cause.data.retry_at;
  Object.assign(error.data, { give_up: why, attempts, elapsed_ms: elapsedMs });
  // ProviderError's constructor takes no cause; keep the original failure for whoever debugs it.
  error.cause = cause;
  return error;
}

function abortedError(context: RetryContext, cause: unknown): ProviderError {
  const error = new ProviderError(
    terminalClassified("aborted", "aborted by the caller"),
    context.provider,
    context.model,
  );
  error.data.give_up = "aborted";
  error.cause = cause;
  return error;
}
