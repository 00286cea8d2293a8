// The answers of the gateway's turn admission when a turn cannot start or wait: an unknown
// session, a session whose queue is full, a gateway running its whole gateway.max_turns.
import { GatewayError } from "./http-error.js";

export function unknownSession(id: string): GatewayError {
  return new GatewayError(
    404,
    "not_found_error",
    "session_not_found",
    `no session ${id}; leave out X-Session-Id to start a new one (GET /api/sessions lists them)`,
  );
}

/** A busy session already holds `bound` waiting turns (gateway.session_queue). */
export function sessionQueueFull(id: string, bound: number): GatewayError {
  return new GatewayError(
    429,
    "rate_limit_error",
    "session_queue_full",
    bound === 0
      ? `session ${id} is running a turn and gateway.session_queue is 0 (no turn waits); send the next message once it has answered`
      : `session ${id} is running a turn and ${bound} more are waiting for it (gateway.session_queue); retry once one has answered`,
    { "retry-after": "1" },
  );
}

export function tooManyTurns(max: number): GatewayError {
  return new GatewayError(
    429,
    "rate_limit_error",
    "too_many_turns",
    `the gateway is already running ${max} turns (gateway.max_turns); retry when one has finished`,
    { "retry-after": "1" },
  );
}
