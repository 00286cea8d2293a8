// Why a turn did not complete, as a value every client can act on: a stable code (the classified
// reason of the provider call that gave up, a guardrail's, an interrupt's), the layer that gave up,
// a message for people saying which layer and why, the wait the provider asked for, and what to do
// next. The turn builds it once; the gateway, the runs API and the CLI only read it.
import { TenaxError } from "../core/errors.js";
import { type ClassifiedError, type ErrorReason, ProviderError } from "../llm/classified-error.js";
import type { Target } from "../llm/route-events.js";
import { storeRefusal } from "../store/errors.js";

/** Who stopped the turn short of an answer. */
export type FailureLayer =
  | "provider"
  /** Tenax's own process (out of file descriptors): no provider was reached. */
  | "process"
  | "retry"
  | "credentials"
  | "fallback"
  /** The model's circuit breaker was open and no fallback was left. */
  | "breaker"
  | "compression"
  | "guardrails"
  | "interrupt"
  | "store"
  | "agent";

export type GuardrailCode = "identical_call_limit" | "max_iterations";

/**
 * Why a turn was interrupted: the client hung up, the gateway is shutting down, someone asked it to
 * stop (POST /v1/runs/ID/stop, `tenax sessions stop`), it ran past agent.turn_deadline, or anything
 * else that aborted it (a hung worker, Ctrl-C).
 */
export type InterruptCode =
  | "client_closed"
  | "shutting_down"
  | "stopped"
  | "interrupted"
  | "turn_deadline"
  /** Another process took the turn over (store/lease-fence.ts): it carries the turn on. */
  | "lease_lost";

export type FailureCode = ErrorReason | GuardrailCode | InterruptCode | "store_unavailable" | "turn_failed";

export interface TurnFailure {
  code: FailureCode;
  layer: FailureLayer;
  /** For people: which layer gave up and why. */
  message: string;
  /** What to do next, and whose job it is (the caller's, or the operator's). */
  next: string;
  /** How long to wait before trying again, when known (a provider's retry-after, a key's cooldown). */
  retry_after_ms: number | null;
  /** The classified failure of the provider call that gave up; null when no provider call did. */
  classified: ClassifiedError | null;
  /** The model whose call gave up last. */
  target: Target | null;
}

/** An abort reason that says why: the turn's failure takes its code and message. */
export class TurnInterrupt extends Error {
  override readonly name = "TurnInterrupt";
  constructor(
    readonly code: InterruptCode,
    message: string,
  ) {
    super(message);
  }

  static isInstance(value: unknown): value is TurnInterrupt {
    return value instanceof Error && value.name === "TurnInterrupt" && "code" in value;
  }
}

/** The abort reason of a turn another process took over. */
export function lostLease(error: TenaxError): TurnInterrupt {
  return new TurnInterrupt("lease_lost", `another process took this turn over (${error.message})`);
}

/** What the turn knows about an overflow it could not get past. */
export interface OverflowState {
  /** A compression pass ran for this overflow and the request was still refused. */
  compressed: boolean;
}

/** The failure of a turn stopped by its signal. */
export function interruptFailure(reason: unknown): TurnFailure {
  const code: InterruptCode = TurnInterrupt.isInstance(reason) ? reason.code : "interrupted";
  // A bare abort ("This operation was aborted") says nothing: only a reason given in words is told.
  const why =
    TurnInterrupt.isInstance(reason) || (reason instanceof Error && reason.name !== "AbortError")
      ? reason.message || "stopped by its caller"
      : "stopped by its caller";
  const next: Record<InterruptCode, string> = {
    client_closed: "nothing: the client that asked is gone; the session takes the next message",
    shutting_down: "retry against the restarted gateway",
    stopped: "submit it again to start over",
    interrupted: "send the request again",
    turn_deadline:
      "send it again, split into smaller steps, or raise agent.turn_deadline in config.yaml; `tenax events --type turn_stalled` shows where it stalled",
    lease_lost:
      "nothing: another process took this turn over and carries it on; its session shows the answer when that process ends it",
  };
  return {
    code,
    layer: "interrupt",
    // The marker's wording too: history.ts knows an unanswered question by "turn interrupted".
    message:
      code === "turn_deadline"
        ? `the turn was ended: ${why}; nothing of it runs any more`
        : `turn interrupted: ${why}; nothing of it runs any more`,
    next: next[code],
    retry_after_ms: code === "shutting_down" ? 5_000 : null,
    classified: null,
    target: null,
  };
}

/** The failure of a turn a guardrail or the iteration budget halted. */
export function guardrailFailure(code: GuardrailCode, message: string): TurnFailure {
  return {
    code,
    layer: "guardrails",
    message: `the guardrails halted the turn: ${message}`,
    next:
      code === "max_iterations"
        ? "send a follow-up message to let it go on, or raise agent.max_iterations in config.yaml"
        : "rephrase the request, or raise agent.identical_call_limit in config.yaml",
    retry_after_ms: null,
    classified: null,
    target: null,
  };
}

/** The failure of a turn that threw: a provider call that gave up, the store, or a bug. */
export function thrownFailure(error: unknown, overflow: OverflowState | null = null): TurnFailure {
  if (error instanceof ProviderError) return providerFailure(error, overflow);
  const refusal = storeRefusal(error);
  if (refusal !== null && TenaxError.isInstance(error))
    return {
      code: "store_unavailable",
      layer: "store",
      message: `the session store refused a write of the turn (${refusal.code}): ${error.message}`,
      next: error.hint ?? "tenax status names what the store needs",
      retry_after_ms: refusal.retryAfterMs,
      classified: null,
      target: null,
    };
  return {
    code: "turn_failed",
    layer: "agent",
    message: `the turn failed unexpectedly: ${error instanceof Error ? error.message : String(error)}`,
    next: "this is a bug in Tenax: report it with logs/gateway.log",
    retry_after_ms: null,
    classified: null,
    target: null,
  };
}

function providerFailure(error: ProviderError, overflow: OverflowState | null): TurnFailure {
  const classified = error.classified;
  const target = { provider: error.provider, model: error.model };
  const name = `${target.provider}/${target.model}`;
  const what = `${classified.reason}: ${classified.message}`;
  const tried = fallbackTried(error.data.fallback_tried);
  const giveUp = error.data.give_up;
  const attempts = typeof error.data.attempts === "number" ? error.data.attempts : null;
  const elapsed = typeof error.data.elapsed_ms === "number" ? error.data.elapsed_ms : null;
  let layer: FailureLayer;
  let message: string;
  if (classified.reason === "local_resources") {
    layer = "process";
    message = `Tenax's own process could not call ${name}: ${classified.message}`;
  } else if (classified.compress) {
    layer = "compression";
    message = `the conversation is too large for ${name} (${what}) and compression ${
      overflow?.compressed
        ? "ran but could not make it fit"
        : "could not run (it is off, cooling down after failures, or past its passes for this turn)"
    }`;
  } else if (classified.reason === "circuit_open") {
    layer = "breaker";
    message = `the circuit breaker of ${name} is open and no model of the fallback chain was left: ${classified.message}`;
  } else if (classified.reason === "reply_diverged") {
    layer = "retry";
    message = `the retry layer could not go on with the reply of ${name}: ${what}`;
  } else if (tried !== null) {
    layer = "fallback";
    message = `the fallback layer gave up: every model of the chain failed this turn (${tried}); the last, ${name}: ${what}`;
  } else if (error.data.layer === "credentials") {
    layer = "credentials";
    message = `the credentials layer gave up on ${name}: ${classified.message}`;
  } else if (giveUp === "attempts_spent") {
    layer = "retry";
    message = `the retry layer gave up on ${name} after ${
      attempts === null ? "its attempts" : attempts === 1 ? "1 attempt" : `${attempts} attempts`
    }${elapsed === null ? "" : ` in ${seconds(elapsed)}`}: ${what}`;
  } else if (giveUp === "retry_after_too_long") {
    layer = "retry";
    message = `the retry layer gave up on ${name}: the provider asked to wait ${
      classified.retry_after_ms === null ? "too long" : seconds(classified.retry_after_ms)
    }, longer than it waits in a turn (${what})`;
  } else {
    layer = "provider";
    message = `the provider ${name} failed and retrying cannot help: ${what}`;
  }
  return {
    code: classified.reason,
    layer,
    message,
    next: nextStep(classified, target.provider),
    retry_after_ms: classified.retry_after_ms,
    classified,
    target,
  };
}

/** What to do after a provider failure, by reason; the operator's fixes name the config key. */
function nextStep(classified: ClassifiedError, provider: string): string {
  const wait = classified.retry_after_ms === null ? "later" : `in ${seconds(classified.retry_after_ms)}`;
  switch (classified.reason) {
    case "unreachable":
      return `start the provider, or fix providers.${provider}.base_url in config.yaml (the gateway operator's job); tenax status shows every provider`;
    case "ssl_cert_verification":
      return `the gateway operator must fix what the message says (NODE_EXTRA_CA_CERTS for a private CA, the machine's clock, or the host name in providers.${provider}.base_url); retrying will not help until then`;
    case "model_incompatible":
      return `send the request to a model that has the feature it needs, or the gateway operator lists one under fallback in config.yaml; providers.${provider}'s model does not have it`;
    case "reasoning_mandatory":
      return "send the request with reasoning left on: this model cannot answer without it";
    case "local_resources":
      return `retry ${wait}; the gateway operator must raise its open-file limit (ulimit -n, LimitNOFILE=) or end what holds its connections open: providers.${provider} is not at fault`;
    case "rate_limit":
      return `retry ${wait}; more keys in providers.${provider}.api_keys raise the limit`;
    case "overloaded":
    case "server_error":
    case "timeout":
    case "stream_drop":
    case "format_error":
    case "unknown":
    case "aborted":
      return `retry ${wait}; a fallback model in config.yaml (fallback:) answers while this provider fails`;
    case "auth":
    case "auth_permanent":
      return `the gateway operator must replace the key in providers.${provider}.api_keys (config.yaml or .env); retrying will not help until then`;
    case "key_required":
      return `the gateway operator must add the server's key as providers.${provider}.api_keys (config.yaml or .env); each turn calls the server again, so one with a key set answers`;
    case "billing":
      return `the gateway operator must add credit to the account of providers.${provider} or replace its key; retrying will not help until then`;
    case "model_not_found":
      return `the gateway operator must fix the model name (model: or fallback: in config.yaml) or providers.${provider}.base_url`;
    case "context_overflow":
    case "payload_too_large":
    case "long_context_tier":
      return "start a new session (leave out X-Session-Id) or send a shorter conversation";
    case "content_policy_blocked":
      return "rephrase the request: the provider's moderation refused it";
    case "invalid_request":
    case "thinking_signature":
      return "the provider refused the request Tenax built: report it with logs/gateway.log";
    case "circuit_open":
      return `retry ${wait}, when the breaker lets one probe call through to ${provider}; a fallback model in config.yaml (fallback:) answers while its circuit is open`;
    case "reply_diverged":
      return "send the request again: the text received so far is not an answer (the provider's stream broke mid-reply and its retry said something else)";
    default: {
      const never: never = classified.reason;
      return `retry later (${String(never)})`;
    }
  }
}

function fallbackTried(value: unknown): string | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  return value
    .map(
      (t: { provider?: unknown; model?: unknown; reason?: unknown }) =>
        `${t.provider}/${t.model}: ${t.reason}`,
    )
    .join(", ");
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : `${Math.round(ms / 100) / 10} s`;
}
