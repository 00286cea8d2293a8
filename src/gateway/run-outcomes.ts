// How a run ends, as values: the outcome of its turn's result, of a turn that threw or never
// started, the errors a run record keeps, and what makes two submissions the same.
import { createHash } from "node:crypto";
import type { TurnResult } from "../agent/turn.js";
import { type TurnFailure, TurnInterrupt } from "../agent/turn-failure.js";
import { HttpError } from "../http/http-error.js";
import { wireError } from "./failure-status.js";
import { storeUnavailable } from "./gateway-errors.js";
import type { RunError, RunOutcome } from "./run-records.js";
export function outcomeOf(result: TurnResult): RunOutcome {
  return {
    status: result.status,
    reply: result.reply,
    partial: result.partial || result.status !== "completed",
    error: result.failure === null ? null : runError(result.failure),
  };
}

/** A queued run that never started: stopped (POST /v1/runs/ID/stop), or the gateway shut down. */
export function notStarted(error: unknown): RunOutcome {
  if (error instanceof TurnInterrupt)
    return {
      status: "interrupted",
      reply: "",
      partial: true,
      error: storedError(
        "stopped",
        "conflict_error",
        `the run was stopped before its turn started: ${error.message}`,
        "submit it again",
      ),
    };
  const refused = error instanceof HttpError ? error : null;
  return {
    status: "failed",
    reply: "",
    partial: true,
    error: refused
      ? storedError(
          refused.code,
          refused.type,
          `the run's turn never started: ${refused.message}`,
          "submit it again",
        )
      : thrownError(error),
  };
}

/** A run's error: what a chat completion of its turn answers (failure-status.ts), without `param`. */
export function runError(failure: TurnFailure): RunError {
  const { param: _param, ...error } = wireError(failure);
  return error;
}

/** A turn that threw (its store refused, a bug): the error the chat route answers for it. */
export function thrownError(error: unknown): RunError {
  const refused = storeUnavailable(error);
  if (refused) return { ...storedError(refused.code, refused.type, refused.message, null), layer: "store" };
  const message = `the turn failed: ${error instanceof Error ? error.message : String(error)}`;
  return { ...storedError("turn_failed", "server_error", message, null), layer: "agent" };
}

/** An error known only by its code and message (a stored turn, a turn that threw). */
export function storedError(code: string, type: string, message: string, next: string | null): RunError {
  return { message, type, code, layer: null, next, retry_after_ms: null };
}

/** Two submissions are the same when their session header and their body (as JSON) are. */
export function fingerprint(sessionId: string | undefined, body: unknown): string {
  return createHash("sha256")
    .update(canonical({ session_id: sessionId ?? null, body }))
    .digest("hex");
}

export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

/** Another gateway claimed the key and has not committed its run yet: the client retries shortly. */
export function keyPending(key: string): HttpError {
  return new HttpError(
    409,
    "conflict_error",
    "idempotency_key_in_progress",
    `another gateway is starting the run for the Idempotency-Key ${JSON.stringify(key)}; send the same request again in a second to get it`,
    { "retry-after": "1" },
  );
}

export function keyReused(key: string): HttpError {
  return new HttpError(
    409,
    "conflict_error",
    "idempotency_key_reused",
    `the Idempotency-Key ${JSON.stringify(key)} was already used for a different request (other body or X-Session-Id); send the same request to get its run, or use a new key for a new run`,
  );
}
