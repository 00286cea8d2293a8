// Every gateway error leaves as one OpenAI-shaped body, {"error":{"message","type","code"}}, with
// the status that says what went wrong; handlers throw a GatewayError and the server answers it.
import type { IncomingMessage, ServerResponse } from "node:http";
import { TenaxError } from "../core/errors.js";
import { HttpRequestError, sendJson } from "../core/http.js";

export { decodePathPart, headerValue, sendJson } from "../core/http.js";

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "conflict_error"
  | "rate_limit_error"
  | "unavailable_error"
  | "provider_error"
  | "guardrail_error"
  | "server_error";

/** More of the body than message, type and code: the error's extra fields, and a `tenax` part. */
export interface ErrorDetails {
  error?: Record<string, unknown>;
  tenax?: Record<string, unknown>;
}

export class GatewayError extends Error {
  override readonly name = "GatewayError";
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly details: ErrorDetails = {},
  ) {
    super(message);
  }

  toJSON(): { error: { message: string; type: string; code: string }; tenax?: Record<string, unknown> } {
    const error = { ...this.details.error, message: this.message, type: this.type, code: this.code };
    return this.details.tenax === undefined ? { error } : { error, tenax: this.details.tenax };
  }
}

export const SHUTDOWN_MESSAGE =
  "the gateway is shutting down and takes no new turns; retry against the restarted gateway";

/** 503 while the gateway drains: the client retries against the restarted one. */
export function unavailable(): GatewayError {
  return new GatewayError(503, "unavailable_error", "shutting_down", SHUTDOWN_MESSAGE, {
    "retry-after": "5",
  });
}

export const badRequest = (code: string, message: string) =>
  new GatewayError(400, "invalid_request_error", code, message);

export function sendError(res: ServerResponse, error: GatewayError): void {
  sendJson(res, error.status, error.toJSON(), error.headers);
}

/** Anything unexpected becomes a 500 in the same shape, never a crash or an HTML page. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof HttpRequestError)
    return new GatewayError(error.status, "invalid_request_error", error.code, error.message);
  const store = storeUnavailable(error);
  if (store) return store;
  const message = error instanceof Error ? error.message : String(error);
  return new GatewayError(500, "server_error", "internal_error", `the gateway failed: ${message}`);
}

/**
 * The session store refused (damaged, disk full, an I/O error): a 503 that names the store layer
 * and what to run, not a 500 that looks like a gateway bug. Writes it could not take are spooled.
 */
export function storeUnavailable(error: unknown): GatewayError | null {
  if (!TenaxError.isInstance(error) || !/^store_/.test(error.code)) return null;
  return new GatewayError(
    503,
    "unavailable_error",
    "store_unavailable",
    `the session store refused the request (${error.code}): ${error.message}${error.hint ? `; ${error.hint}` : ""}`,
    { "retry-after": "30" },
  );
}

/** 405 with the methods a route takes, in the Allow header. */
export function onlyMethods(req: IncomingMessage, methods: readonly string[]): void {
  if (methods.includes(req.method ?? "")) return;
  throw new GatewayError(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `method ${req.method} is not allowed here; use ${methods.join(" or ")}`,
    { allow: methods.join(", ") },
  );
}
