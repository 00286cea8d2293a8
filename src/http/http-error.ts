// The one error every Tenax HTTP app answers with: a status, the OpenAI error type and code, a
// message that says what to do, and headers; `toJSON` is the OpenAI shape
// {"error":{"message","type","code",...}}. Handlers throw it; the app's error handler sends it.
import type { IncomingHttpHeaders } from "node:http";

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

export interface ErrorBody {
  error: { message: string; type: string; code: string } & Record<string, unknown>;
  tenax?: Record<string, unknown>;
}

export class HttpError extends Error {
  override readonly name = "HttpError";
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

  /** Across copies of this module (a test importing src/ beside dist/), by shape, not by class. */
  static isInstance(value: unknown): value is HttpError {
    return (
      value instanceof HttpError ||
      (value instanceof Error &&
        value.name === "HttpError" &&
        typeof (value as Partial<HttpError>).status === "number" &&
        typeof (value as Partial<HttpError>).toJSON === "function")
    );
  }

  /** The same error with more headers (the session id a failed chat still names). */
  withHeaders(headers: Record<string, string>): HttpError {
    return new HttpError(
      this.status,
      this.type,
      this.code,
      this.message,
      { ...headers, ...this.headers },
      this.details,
    );
  }

  toJSON(): ErrorBody {
    const error = { ...this.details.error, message: this.message, type: this.type, code: this.code };
    return this.details.tenax === undefined ? { error } : { error, tenax: this.details.tenax };
  }
}

export const badRequest = (code: string, message: string, details?: ErrorDetails): HttpError =>
  new HttpError(400, "invalid_request_error", code, message, {}, details);

/** The OpenAI type that goes with a status, for errors that do not choose their own. */
export function typeForStatus(status: number): ErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 409) return "conflict_error";
  if (status === 429) return "rate_limit_error";
  if (status === 503) return "unavailable_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** 405 with the methods a route takes, in the Allow header. */
export function methodNotAllowed(method: string, allowed: readonly string[]): HttpError {
  return new HttpError(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `method ${method} is not allowed here; use ${allowed.join(" or ")}`,
    { allow: allowed.join(", ") },
  );
}

/** One percent-encoded path part (a session or run id); a 400 `invalid_url` naming `what` when it is not valid. */
export function decodePathPart(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw badRequest("invalid_url", `the ${what} ${JSON.stringify(part)} is not valid percent-encoding`);
  }
}

/** A request header's first value, trimmed; undefined when absent or blank. */
export function headerValue(value: IncomingHttpHeaders[string]): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}
