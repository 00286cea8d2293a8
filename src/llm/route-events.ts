// The status events of the resilience layers: every retry, key rotation, fallback and auxiliary
// decision says what happened, which layer did it and why, while it happens. Nothing degrades
// without one of these.
import type { ClassifiedError, ErrorReason } from "./classified-error.js";
import type { ProviderEvent } from "./provider.js";
import type { RetryEvent } from "./retry.js";

export interface Target {
  provider: string;
  model: string;
}

export type AuxiliaryTask = "compression" | "title" | "vision";

/** Which layer an event (or a final failure) belongs to. */
export type Layer = "retry" | "credentials" | "fallback" | "auxiliary" | "provider" | "breaker";

export type StatusEvent =
  | (RetryEvent & { layer: "retry" })
  | {
      type: "credential_rotated";
      layer: "credentials";
      provider: string;
      model: string;
      /** The key that failed, by fingerprint. */
      from: string;
      /** False for a provider that needs no key: `from` is then the server itself, cooling down. */
      keyed: boolean;
      reason: ErrorReason;
      /** The HTTP status of the failure, null when there was no response. */
      status: number | null;
      /** cooled: skipped until cooldown_until; disabled: skipped until the key changes. */
      verdict: "cooled" | "disabled";
      cooldown_until: number | null;
      /** How long the key is cooled from now; null when it is disabled, or its cooldown is over. */
      cooldown_ms: number | null;
      /** The retry layer's attempt this failure ended (1-based), and its budget. */
      attempt: number;
      max_attempts: number;
      /**
       * The key the pool offers next, as it stood when the key was cooled (the same key when its
       * cooldown has already ended); null when none is usable, so credentials_exhausted follows.
       */
      next_key: string | null;
      message: string;
    }
  | {
      type: "credentials_exhausted";
      layer: "credentials";
      provider: string;
      model: string;
      reason: ErrorReason;
      /** When the first cooling key becomes usable again; null when every key is disabled. */
      next_usable_at: number | null;
      /** False for a provider that needs no key: the server itself is cooling down. */
      keyed: boolean;
      message: string;
    }
  | {
      /**
       * A stream failed after part of its reply was delivered, and the next attempt starts: the
       * listener drops the last `discard_chars` characters of the text it has (all this call told
       * it), or none when the call is append-only and the attempt must go on from them.
       */
      type: "stream_restart";
      layer: "retry";
      provider: string;
      model: string;
      reason: ErrorReason;
      discard_chars: number;
      /** The attempt that starts (1-based), and the retry budget. */
      attempt: number;
      max_attempts: number;
      message: string;
    }
  | {
      /**
       * The same request would fail again (reasoning turned off on a model that always reasons,
       * replayed thinking refused): it is sent once more, changed as `message` says (request-fixes.ts).
       */
      type: "request_fixed";
      layer: "retry";
      provider: string;
      model: string;
      reason: ErrorReason;
      status: number | null;
      message: string;
    }
  | {
      /** A model's circuit opened: calls skip it until `retry_at`, then one probe goes (breaker.ts). */
      type: "breaker_opened";
      layer: "breaker";
      provider: string;
      model: string;
      /** The last failure's reason (one that says the model is unwell). */
      reason: ErrorReason;
      /** Unwell failures in a row that opened it (or since it first opened). */
      failures: number;
      /** True when it opened again because its half-open probe call failed. */
      probe_failed: boolean;
      cooldown_ms: number;
      retry_at: number;
      message: string;
    }
  | {
      /** The cool-down is over: this call is the one probe let through. */
      type: "breaker_half_open";
      layer: "breaker";
      provider: string;
      model: string;
      /** Why it had opened. */
      reason: ErrorReason | null;
      message: string;
    }
  | {
      /** A call answered: the circuit is closed and calls go to the model again. */
      type: "breaker_closed";
      layer: "breaker";
      provider: string;
      model: string;
      /** Why it had opened. */
      reason: ErrorReason | null;
      message: string;
    }
  | {
      /** Another model takes the call over; `discard_chars` as for `stream_restart`. */
      type: "fallback";
      layer: "fallback";
      from: Target;
      to: Target;
      reason: ErrorReason;
      discard_chars: number;
      message: string;
    }
  | {
      type: "fallback_skipped";
      layer: "fallback";
      candidate: Target;
      context_window: number;
      needed_tokens: number;
      message: string;
    }
  | {
      type: "fallback_exhausted";
      layer: "fallback";
      tried: Array<Target & { reason: ErrorReason }>;
      message: string;
    }
  | {
      type: "auxiliary_skipped";
      layer: "auxiliary";
      task: AuxiliaryTask;
      candidate: Target;
      why: "context_window" | "failed";
      context_window: number | null;
      needed_tokens: number;
      reason: ErrorReason | null;
      message: string;
    }
  | {
      type: "auxiliary_routed";
      layer: "auxiliary";
      task: AuxiliaryTask;
      candidate: Target;
      /** null when the model's window is not in config, so the size could not be checked. */
      context_window: number | null;
      needed_tokens: number;
      message: string;
    }
  | {
      /** Warning: no candidate could do the task, so it is skipped. */
      type: "auxiliary_exhausted";
      layer: "auxiliary";
      task: AuxiliaryTask;
      tried: Array<Target & { why: "context_window" | "failed" }>;
      message: string;
    };

/**
 * How one call to one target ended (after its keys and retries): what provider health is made of.
 * Not a status event: it is reported for every call, the ones that went well included.
 */
export type CallOutcome =
  | { provider: string; model: string; at: number; ok: true }
  | { provider: string; model: string; at: number; ok: false; error: ClassifiedError };

/** What a model call reports as it goes: the reply as it streams, and every status event. */
export type RouteEvent = Exclude<ProviderEvent, { type: "done" } | { type: "error" }> | StatusEvent;

export type RouteListener = (event: RouteEvent) => void;

/** A listener that never throws into the call that reports to it. */
export function safeListener(listener: RouteListener | undefined): RouteListener {
  if (!listener) return () => {};
  return (event) => {
    try {
      listener(event);
    } catch {
      // A broken listener must not break a model call.
    }
  };
}
