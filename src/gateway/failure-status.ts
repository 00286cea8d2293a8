// The one mapping from why a turn failed to what an HTTP client gets: the status, the error type,
// Retry-After, and the OpenAI-shaped error whose code is the failure's own. A client is never told
// a failure is its fault unless it can fix it (a conversation too large, content refused); a
// provider's failure, even of its key, is the gateway's upstream failing (502), or 503 with
// Retry-After when waiting is what helps.
import type { FailureCode, TurnFailure } from "../agent/turn-failure.js";
import { type ErrorType, HttpError } from "../http/http-error.js";

export interface FailureStatus {
  status: number;
  type: ErrorType;
}

const upstream: FailureStatus = { status: 502, type: "provider_error" };
const wait: FailureStatus = { status: 503, type: "provider_error" };
const tooLarge: FailureStatus = { status: 400, type: "invalid_request_error" };

/**
 * Every failure code and its answer. Auth and billing of the provider's key are 502, not 401/402
 * (the client's own key was fine) and not 503 (no wait fixes a dead key: the operator must).
 */
export const FAILURE_STATUS: Readonly<Record<FailureCode, FailureStatus>> = {
  // The provider failed or answered something unusable: a bad gateway upstream.
  server_error: upstream,
  timeout: upstream,
  stream_drop: upstream,
  unreachable: upstream,
  // The operator's setup (a CA, the clock, base_url's host name), not the client's request.
  ssl_cert_verification: upstream,
  format_error: upstream,
  unknown: upstream,
  aborted: upstream,
  model_not_found: upstream,
  invalid_request: upstream,
  thinking_signature: upstream,
  // The model configured lacks what the turn needs (tools, images, reasoning off): the operator's
  // choice of model, which the client cannot change for an agent turn.
  model_incompatible: upstream,
  reasoning_mandatory: upstream,
  // The provider's stream broke mid-reply and its retry said something else than what was sent.
  reply_diverged: upstream,
  auth: upstream,
  auth_permanent: upstream,
  key_required: upstream,
  billing: upstream,
  // Waiting helps: every key cools down, or the provider is at capacity (Retry-After when known).
  rate_limit: wait,
  overloaded: wait,
  // The model's breaker is open and no fallback is left: Retry-After says when it is tried again.
  circuit_open: wait,
  // The conversation is too large and nothing (compression, another model) could fix it.
  context_overflow: tooLarge,
  payload_too_large: tooLarge,
  long_context_tier: tooLarge,
  // The provider's moderation refused the input; the caller can rephrase, as with OpenAI's own 400.
  content_policy_blocked: tooLarge,
  // The gateway's own process is out of file descriptors: its failure, not the provider's; a wait may help.
  local_resources: { status: 503, type: "unavailable_error" },
  // The turn ran and a guardrail stopped it: nothing to retry as is, and no one's bug.
  identical_call_limit: { status: 422, type: "guardrail_error" },
  max_iterations: { status: 422, type: "guardrail_error" },
  // Interrupted, not failed: the gateway is going away, someone stopped the turn, the client left.
  shutting_down: { status: 503, type: "unavailable_error" },
  interrupted: { status: 503, type: "unavailable_error" },
  stopped: { status: 409, type: "conflict_error" },
  // The turn ran past agent.turn_deadline and was ended: the gateway gave up waiting on it.
  turn_deadline: { status: 504, type: "server_error" },
  client_closed: { status: 499, type: "invalid_request_error" },
  // Another gateway took the turn over (its lease epoch moved on): that one carries it.
  lease_lost: { status: 409, type: "conflict_error" },
  store_unavailable: { status: 503, type: "unavailable_error" },
  turn_failed: { status: 500, type: "server_error" },
};

/** Retry-After in whole seconds (at least 1), on a 503 whose wait is known. */
export function retryAfterHeader(failure: TurnFailure): Record<string, string> {
  const { status } = FAILURE_STATUS[failure.code];
  if (status !== 503 || failure.retry_after_ms === null) return {};
  return { "retry-after": String(Math.max(1, Math.ceil(failure.retry_after_ms / 1000))) };
}

/** The error object a client reads: OpenAI's fields, then the layer and the next step. */
export function wireError(failure: TurnFailure) {
  return {
    message: `${failure.message}; what to do: ${failure.next}`,
    type: FAILURE_STATUS[failure.code].type,
    code: failure.code,
    param: null,
    layer: failure.layer,
    next: failure.next,
    retry_after_ms: failure.retry_after_ms,
  };
}

export type WireError = ReturnType<typeof wireError>;

/** The whole answer to a failed turn, with its headers and the turn's ids in `tenax`. */
export function failureError(
  failure: TurnFailure,
  tenax: Record<string, unknown>,
  headers: Record<string, string> = {},
): HttpError {
  const { status, type } = FAILURE_STATUS[failure.code];
  const wire = wireError(failure);
  return new HttpError(
    status,
    type,
    failure.code,
    wire.message,
    { ...headers, ...retryAfterHeader(failure) },
    { error: wire, tenax },
  );
}
