// What the CLI can know of a failed turn today: the turn's error text, which the turn loop builds
// from the ProviderError as "LAYER: PROVIDER/MODEL: REASON: MESSAGE", and the retry layer's give-up
// event for the attempts. Read back here, in one place, until the turn result carries its failure
// as data; then this file becomes a field access.
import { ERROR_REASONS } from "../../llm/classified-error.js";
import { connectProblem, type FailureReason, type TurnFailure } from "./failure-hints.js";

const REASONS: ReadonlySet<string> = new Set<string>([...ERROR_REASONS, "unreachable"]);

/** A provider name is a config key (no slash); the model may hold slashes ("openai/gpt-4o"). */
const PROVIDER_FAILURE = /^([a-z_]+): ([^/\s:]+)\/(.+?): ([a-z_]+): ([\s\S]*)$/;

import type { GaveUp } from "./event-lines.js";

export function turnFailure(error: string, gaveUp: GaveUp | null): TurnFailure {
  const m = PROVIDER_FAILURE.exec(error);
  if (!m || !REASONS.has(m[4] ?? "")) {
    return {
      layer: error.startsWith("stopped:") ? "guardrails" : "agent",
      reason: null,
      provider: null,
      model: null,
      status: null,
      message: error,
      attempts: null,
      elapsed_ms: null,
    };
  }
  const [, layer = "provider", provider = "", model = "", said = "unknown", message = ""] = m;
  const same = gaveUp !== null && gaveUp.provider === provider && gaveUp.model === model ? gaveUp : null;
  const status = same?.status ?? null;
  return {
    layer,
    reason: shownReason(said as FailureReason, status, message),
    provider,
    model,
    status,
    message,
    attempts: same?.attempt ?? null,
    elapsed_ms: same?.elapsed_ms ?? null,
  };
}

/**
 * A transport failure before any answer is `unreachable`. Until the classifier has that reason,
 * such a failure arrives as a `server_error` with no HTTP status, its message led by the
 * connect-level code; it is named for what it is here.
 */
export function shownReason(reason: FailureReason, status: number | null, message: string): FailureReason {
  if (reason === "server_error" && status === null && connectProblem(message) !== null) return "unreachable";
  return reason;
}
