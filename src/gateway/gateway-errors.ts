// The gateway's own errors, in the one HttpError shape (src/http/http-error.ts): stopping (503), a
// store that refused (503 naming the store layer), and turn admission's: an unknown session, a
// session whose queue is full, a gateway running its whole gateway.max_turns.
import { TenaxError } from "../core/errors.js";
import { toHttpError } from "../http/app.js";
import { HttpError } from "../http/http-error.js";
import { storeRefusal } from "../store/errors.js";

export const SHUTDOWN_MESSAGE =
  "the gateway is shutting down and takes no new turns; retry against the restarted gateway";

/** 503 while the gateway drains: the client retries against the restarted one. */
export function unavailable(): HttpError {
  return new HttpError(503, "unavailable_error", "shutting_down", SHUTDOWN_MESSAGE, {
    "retry-after": "5",
  });
}

/**
 * The session store refused (damaged, disk full, an I/O error): a 503 that names the store layer
 * and what to run, not a 500 that looks like a gateway bug. Writes it could not take are spooled.
 */
export function storeUnavailable(error: unknown): HttpError | null {
  const refusal = storeRefusal(error);
  if (refusal === null || !TenaxError.isInstance(error)) return null;
  return new HttpError(
    503,
    "unavailable_error",
    "store_unavailable",
    `the session store refused the request (${refusal.code}): ${error.message}${error.hint ? `; ${error.hint}` : ""}`,
    { "retry-after": String(Math.max(1, Math.ceil(refusal.retryAfterMs / 1000))) },
  );
}

export function unknownSession(id: string): HttpError {
  return new HttpError(
    404,
    "not_found_error",
    "session_not_found",
    `no session ${id}; leave out X-Session-Id to start a new one (GET /api/sessions lists them)`,
  );
}

/** A busy session already holds `bound` waiting turns (gateway.session_queue). */
export function sessionQueueFull(id: string, bound: number): HttpError {
  return new HttpError(
    429,
    "rate_limit_error",
    "session_queue_full",
    bound === 0
      ? `session ${id} is running a turn and gateway.session_queue is 0 (no turn waits); send the next message once it has answered`
      : `session ${id} is running a turn and ${bound} more are waiting for it (gateway.session_queue); retry once one has answered`,
    { "retry-after": "1" },
  );
}

/** The session's turn runs on another gateway of a shared store and did not end in time. */
export function sessionBusy(id: string, owner: string | null, waitedS: number): HttpError {
  return new HttpError(
    409,
    "conflict_error",
    "session_busy",
    `session ${id} is running a turn elsewhere (${owner ?? "owner unknown"}: another gateway, or a \`tenax chat\`) that did not end within ${waitedS} s (gateway.session_wait); send the message again once it has answered`,
    { "retry-after": "5" },
  );
}

export function tooManyTurns(max: number): HttpError {
  return new HttpError(
    429,
    "rate_limit_error",
    "too_many_turns",
    `the gateway is already running ${max} turns and model calls (gateway.max_turns); retry when one has finished`,
    { "retry-after": "1" },
  );
}

/** Any failure outside a request's own handler (a stream, an inner call) as the error it answers. */
export function asHttpError(error: unknown): HttpError {
  return toHttpError(error, null, { mapError: storeUnavailable });
}
