// What every failed provider call becomes: one reason and the flags that decide what happens next
// (retry? rotate the key? fall back? compress?). Classified once, at the boundary; nothing
// downstream reads error text again.
import { TenaxError } from "../core/errors.js";

export const ERROR_REASONS = [
  "rate_limit",
  "overloaded",
  "server_error",
  "timeout",
  "stream_drop",
  "unreachable",
  // The endpoint answered the handshake with a certificate this machine does not accept.
  "ssl_cert_verification",
  "local_resources",
  "context_overflow",
  "payload_too_large",
  "long_context_tier",
  "auth",
  "auth_permanent",
  "key_required",
  "billing",
  "model_not_found",
  // The model refuses a feature the request needs (tools, images, a JSON format, a parameter).
  "model_incompatible",
  // The model thinks whatever it is told: a request that turned reasoning off is refused.
  "reasoning_mandatory",
  "content_policy_blocked",
  "invalid_request",
  "format_error",
  "thinking_signature",
  "aborted",
  // Tenax's own: a stream that broke after part of its reply reached a client that cannot take it
  // back, and whose new attempt said something else (told-reply.ts).
  "reply_diverged",
  // Tenax's own: the model's circuit breaker is open (breaker.ts), so no request was sent to it.
  "circuit_open",
  "unknown",
] as const;

export type ErrorReason = (typeof ERROR_REASONS)[number];

export interface ClassifiedError {
  reason: ErrorReason;
  /** Trying the same request again (after a wait) may succeed. */
  retryable: boolean;
  /** The credential is at fault: use the next key of the pool. */
  rotate_credential: boolean;
  /** Another model may succeed where this one will not: move along the fallback chain. */
  fallback: boolean;
  /** The request is too large for the model: compress the context before trying again. */
  compress: boolean;
  /** How long the provider asked us to wait, when it said (headers or body). */
  retry_after_ms: number | null;
  /** HTTP status, when there was a response. */
  status: number | null;
  /** The provider's own message, shortened, for people. */
  message: string;
  /**
   * The provider's error names the model the request asked for (OpenAI's "Rate limit reached for
   * gpt-4o ...", Groq's, OpenRouter's): a rate limit then holds for that model only, not the key.
   */
  model_named?: boolean;
}

/**
 * A classified error that asks for nothing (no retry, rotation, fallback or compression): for
 * failures Tenax names itself, such as an abort or a broken stream contract.
 */
export function terminalClassified(reason: ErrorReason, message: string): ClassifiedError {
  return {
    reason,
    retryable: false,
    rotate_credential: false,
    fallback: false,
    compress: false,
    retry_after_ms: null,
    status: null,
    message,
  };
}

/** Everything the classifier may look at, gathered at the boundary of a provider call. */
export interface ProviderFailure {
  status: number | null;
  headers: Record<string, string>;
  /** The response body: parsed JSON when it was JSON, else the raw text. */
  body: unknown;
  /** A failure below HTTP (connection refused, reset, TLS, a timeout of ours). */
  transport?: { code?: string; name?: string; message: string } | null;
  /** Whether our own AbortSignal ended the call (an abort is never retried). */
  aborted?: boolean;
  /** Where in the exchange it failed: before the first byte, or in the middle of a stream. */
  phase?: "connect" | "headers" | "stream";
  /** The endpoint called (the provider's base URL), so an unreachable one is named in the message. */
  endpoint?: string | null;
  /** The model the request asked for, so an error that names it is told apart (`model_named`). */
  model?: string | null;
  /** Size of the request, when known, to tell a context overflow from other 400s. */
  request_tokens?: number | null;
  context_window?: number | null;
}

/** A provider call that failed, as the typed error layers above see it. */
export class ProviderError extends TenaxError {
  override readonly name = "ProviderError";
  /** `code` defaults to `provider_REASON`; a failure Tenax names itself may carry its own, and a hint. */
  constructor(
    readonly classified: ClassifiedError,
    readonly provider: string,
    readonly model: string,
    options: { code?: string; hint?: string } = {},
  ) {
    super(
      options.code ?? `provider_${classified.reason}`,
      `${provider}/${model}: ${classified.reason}: ${classified.message}`,
      {
        data: { provider, model, ...classified },
        ...(options.hint === undefined ? {} : { hint: options.hint }),
      },
    );
  }
}
