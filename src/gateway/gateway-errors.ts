// The gateway's own errors, in the one HttpError shape (src/http/http-error.ts): stopping (503), a
// store that refused (503 naming the store layer), an unknown session.
import { TenaxError } from "../core/errors.js";
import { HttpError } from "../http/http-error.js";

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
  if (!TenaxError.isInstance(error) || !/^store_/.test(error.code)) return null;
  return new HttpError(
    503,
    "unavailable_error",
    "store_unavailable",
    `the session store refused the request (${error.code}): ${error.message}${error.hint ? `; ${error.hint}` : ""}`,
    { "retry-after": "30" },
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
