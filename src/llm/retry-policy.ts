// How long to wait before trying a failed provider call again, or whether to stop: a table per
// reason and one pure function over it. No clock, no timers, no randomness of its own.
import type { ClassifiedError, ErrorReason } from "./classified-error.js";

/** The longest provider-requested wait we sleep through; past it we give up so the caller can move on. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/**
 * The spread added on top of a provider's retry-after: 10% of it, between 100 ms and 1 s, so that
 * processes told the same reset time do not all come back in the same millisecond.
 */
export const RETRY_AFTER_JITTER = { fraction: 0.1, min_ms: 100, max_ms: 1_000 } as const;

export interface ReasonPolicy {
  /** Whether this reason is worth another attempt at all (the classifier must agree too). */
  retry: boolean;
  /** The backoff ceiling of the first retry; it doubles with each attempt. */
  base_ms: number;
  /** The backoff ceiling never grows past this. */
  max_ms: number;
}

const never: ReasonPolicy = { retry: false, base_ms: 0, max_ms: 0 };

/**
 * The numbers are chosen so that, with equal jitter (a delay in [ceiling/2, ceiling]), for any
 * given attempt the shortest overload wait is at least the longest server-error wait, which in
 * turn is at least the longest transport wait: overload 2 s..30 s, server error 1 s..15 s,
 * timeout and dropped stream 250 ms..5 s.
 */
export const RETRY_POLICY: Readonly<Record<ErrorReason, ReasonPolicy>> = {
  // Used when the provider gave no retry-after; when it did, that is the floor.
  rate_limit: { retry: true, base_ms: 1_000, max_ms: 30_000 },
  // The provider as a whole is struggling: back off hardest so we are not part of the stampede.
  overloaded: { retry: true, base_ms: 2_000, max_ms: 30_000 },
  server_error: { retry: true, base_ms: 1_000, max_ms: 15_000 },
  // Transport failures are usually one bad connection; a fresh one soon tends to work.
  timeout: { retry: true, base_ms: 250, max_ms: 5_000 },
  stream_drop: { retry: true, base_ms: 250, max_ms: 5_000 },
  // Nothing answered (refused, DNS, TLS, reset before the headers): a server that is down or
  // restarting takes seconds, not milliseconds, to come back, so it waits like a server error.
  unreachable: { retry: true, base_ms: 1_000, max_ms: 15_000 },
  // Our own process is out of file descriptors: connections closing meanwhile may free some.
  local_resources: { retry: true, base_ms: 1_000, max_ms: 15_000 },
  // Retried only when the classifier marked this particular failure retryable.
  unknown: { retry: true, base_ms: 1_000, max_ms: 15_000 },
  // The same request will fail the same way: the caller compresses, rotates or falls back instead.
  context_overflow: never,
  payload_too_large: never,
  long_context_tier: never,
  auth: never,
  auth_permanent: never,
  key_required: never,
  billing: never,
  model_not_found: never,
  model_incompatible: never,
  // Sent again once with reasoning left on, by the router (request-fixes.ts), never as it was.
  reasoning_mandatory: never,
  // A certificate that did not verify will not verify a second later.
  ssl_cert_verification: never,
  content_policy_blocked: never,
  invalid_request: never,
  format_error: never,
  thinking_signature: never,
  // Our own caller stopped the work; trying again would defy it.
  aborted: never,
  // What the client was sent stays sent: another attempt would have to say it again by chance.
  reply_diverged: never,
  // The breaker refused the call: the router moves on, or the caller waits for its half-open.
  circuit_open: never,
};

export type GiveUpWhy = "not_retryable" | "attempts_spent" | "retry_after_too_long" | "aborted";

export type RetryDecision =
  | { action: "retry"; delayMs: number; why: string }
  | { action: "give_up"; why: GiveUpWhy };

export interface NextDelayOptions {
  /** Uniform in [0, 1), injected so tests are exact and processes differ. */
  random: () => number;
  maxAttempts: number;
  maxRetryAfterMs: number;
}

/** The backoff ceiling for the retry after failed attempt `attempt` (1-based). */
export function backoffCeilingMs(policy: ReasonPolicy, attempt: number): number {
  return Math.min(policy.max_ms, policy.base_ms * 2 ** (attempt - 1));
}

/**
 * Decides what follows failed attempt number `attempt` (1 for the first call).
 *
 * Backoff uses "equal jitter": a delay drawn uniformly from [ceiling/2, ceiling]. Full jitter
 * ([0, ceiling]) spreads processes slightly wider but can come back after ~0 ms, which against
 * an overloaded provider is exactly the hammering we back off to avoid; equal jitter keeps a
 * floor that doubles with each attempt while still spreading concurrent processes over half
 * the window, so they do not retry in step.
 */
export function nextDelay(
  classified: ClassifiedError,
  attempt: number,
  options: NextDelayOptions,
): RetryDecision {
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new RangeError(`attempt must be 1 or more, got ${attempt}`);
  if (classified.reason === "aborted") return { action: "give_up", why: "aborted" };
  const policy = RETRY_POLICY[classified.reason];
  if (!policy.retry || !classified.retryable) return { action: "give_up", why: "not_retryable" };

  // Checked before the attempt count: a provider asking for a long wait tells the pool how long
  // this key is out, which matters more to the caller than that the budget also ran out.
  const retryAfter = classified.retry_after_ms;
  if (retryAfter !== null && retryAfter > options.maxRetryAfterMs) {
    return { action: "give_up", why: "retry_after_too_long" };
  }
  if (attempt >= options.maxAttempts) return { action: "give_up", why: "attempts_spent" };

  const ceiling = backoffCeilingMs(policy, attempt);
  const backoff = Math.round(ceiling / 2 + options.random() * (ceiling / 2));
  if (retryAfter === null || retryAfter < backoff) {
    return {
      action: "retry",
      delayMs: backoff,
      why: `${classified.reason}: backoff ${backoff} ms (ceiling ${ceiling} ms, attempt ${attempt})`,
    };
  }
  const spread = retryAfterSpreadMs(retryAfter);
  const delayMs = Math.round(retryAfter + options.random() * spread);
  return {
    action: "retry",
    delayMs,
    why: `${classified.reason}: provider asked for ${retryAfter} ms, waiting ${delayMs} ms`,
  };
}

/** The most jitter added on top of a provider's retry-after of `retryAfterMs`. */
export function retryAfterSpreadMs(retryAfterMs: number): number {
  const { fraction, min_ms, max_ms } = RETRY_AFTER_JITTER;
  return Math.min(max_ms, Math.max(min_ms, retryAfterMs * fraction));
}
