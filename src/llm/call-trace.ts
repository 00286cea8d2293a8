// The span of one model call to one target (ModelRouter.call): the GenAI semantic-convention
// attributes (operation, provider, requested and answering model, usage, finish reason), how many
// attempts it took, and each retry, key rotation and restart as an event with its reason. Ids,
// names, counts and reasons only: never the prompt, the reply, or a key (keys by fingerprint).
import { startSpan, type TraceSpan } from "../core/trace.js";
import { ProviderError } from "./classified-error.js";
import type { Completion } from "./model-call.js";
import type { RouteListener, Target } from "./route-events.js";

export interface ModelCallTrace {
  /** Wraps the call's listener: its status events become span events. */
  listener(inner: RouteListener): RouteListener;
  succeeded(completion: Completion): void;
  failed(error: unknown, aborted: boolean): void;
}

export interface ModelCallTraceInput {
  target: Target;
  /** The provider's type (openai, anthropic, simulator): gen_ai.provider.name. */
  system: string | undefined;
  contextTokens: number;
  maxOutputTokens: number | undefined;
  /** Set when this call is the turn's fallback: from which model, and why. */
  fallback?: { from: Target; reason: string } | undefined;
  /**
   * The circuit breaker's say on this target, set as `tenax.circuit.state` (closed, open,
   * half_open): the hook the breaker fills in; unset, no attribute.
   */
  circuitState?: string | null | undefined;
}

export function traceModelCall(input: ModelCallTraceInput): ModelCallTrace {
  const { target } = input;
  const span: TraceSpan = startSpan(
    `chat ${target.model}`,
    {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": input.system ?? target.provider,
      "gen_ai.request.model": target.model,
      "gen_ai.request.max_tokens": input.maxOutputTokens,
      "tenax.provider": target.provider,
      "tenax.request.context_tokens": input.contextTokens,
      "tenax.fallback.from": input.fallback
        ? `${input.fallback.from.provider}/${input.fallback.from.model}`
        : null,
      "tenax.fallback.reason": input.fallback?.reason,
      "tenax.circuit.state": input.circuitState,
    },
    { kind: "client" },
  );
  let retries = 0;
  return {
    listener(inner) {
      return (event) => {
        inner(event);
        switch (event.type) {
          case "retry":
            retries++;
            span.event("retry", {
              "tenax.attempt": event.attempt,
              "tenax.max_attempts": event.max_attempts,
              "tenax.reason": event.reason,
              "tenax.delay_ms": event.delay_ms,
              "http.response.status_code": event.status,
            });
            break;
          case "retry_exhausted":
            span.event("retry_exhausted", {
              "tenax.attempt": event.attempt,
              "tenax.reason": event.reason,
              "tenax.why": event.why,
            });
            break;
          case "credential_rotated":
            span.event("credential_rotated", {
              "tenax.reason": event.reason,
              "tenax.key": event.from,
              "tenax.verdict": event.verdict,
              "http.response.status_code": event.status,
            });
            break;
          case "credentials_exhausted":
            span.event("credentials_exhausted", { "tenax.reason": event.reason });
            break;
          case "stream_restart":
            span.event("stream_restart", { "tenax.reason": event.reason });
            break;
          default:
            break;
        }
      };
    },
    succeeded(completion) {
      span.set({
        "gen_ai.response.model": completion.model,
        "gen_ai.response.finish_reasons": [completion.finish_reason],
        "gen_ai.usage.input_tokens": completion.usage?.input_tokens,
        "gen_ai.usage.output_tokens": completion.usage?.output_tokens,
        "tenax.attempts": completion.attempts,
        "tenax.tool_calls": completion.tool_calls.length,
      });
      span.end();
    },
    failed(error, aborted) {
      const reason = error instanceof ProviderError ? error.classified.reason : "unknown";
      span.set({
        "tenax.attempts": retries + 1,
        "http.response.status_code": error instanceof ProviderError ? error.classified.status : null,
      });
      span.fail(aborted ? "aborted" : reason);
      span.end();
    },
  };
}
