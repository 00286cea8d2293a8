import { describe, expect, it } from "vitest";
import { classifiedFailure } from "../../test/helpers/classified.js";
import {
  type FailureCode,
  guardrailFailure,
  interruptFailure,
  type TurnFailure,
  TurnInterrupt,
  thrownFailure,
} from "../agent/turn-failure.js";
import { ERROR_REASONS, type ErrorReason, ProviderError } from "../llm/classified-error.js";
import { FAILURE_STATUS, failureError, retryAfterHeader, wireError } from "./failure-status.js";

const provider = (reason: ErrorReason, retry_after_ms: number | null = null): TurnFailure =>
  thrownFailure(new ProviderError(classifiedFailure(reason, { retry_after_ms }), "main", "big-model"));

// Written out by hand, apart from the table, so a change to the mapping fails here on purpose.
const EXPECTED: [FailureCode, number, string][] = [
  ["server_error", 502, "provider_error"],
  ["timeout", 502, "provider_error"],
  ["stream_drop", 502, "provider_error"],
  ["unreachable", 502, "provider_error"],
  ["format_error", 502, "provider_error"],
  ["unknown", 502, "provider_error"],
  ["aborted", 502, "provider_error"],
  ["model_not_found", 502, "provider_error"],
  ["invalid_request", 502, "provider_error"],
  ["thinking_signature", 502, "provider_error"],
  ["model_incompatible", 502, "provider_error"],
  ["reasoning_mandatory", 502, "provider_error"],
  ["ssl_cert_verification", 502, "provider_error"],
  ["reply_diverged", 502, "provider_error"],
  ["auth", 502, "provider_error"],
  ["auth_permanent", 502, "provider_error"],
  ["key_required", 502, "provider_error"],
  ["billing", 502, "provider_error"],
  ["rate_limit", 503, "provider_error"],
  ["overloaded", 503, "provider_error"],
  ["circuit_open", 503, "provider_error"],
  ["context_overflow", 400, "invalid_request_error"],
  ["payload_too_large", 400, "invalid_request_error"],
  ["long_context_tier", 400, "invalid_request_error"],
  ["content_policy_blocked", 400, "invalid_request_error"],
  ["identical_call_limit", 422, "guardrail_error"],
  ["max_iterations", 422, "guardrail_error"],
  ["shutting_down", 503, "unavailable_error"],
  ["interrupted", 503, "unavailable_error"],
  ["stopped", 409, "conflict_error"],
  ["lease_lost", 409, "conflict_error"],
  ["turn_deadline", 504, "server_error"],
  ["client_closed", 499, "invalid_request_error"],
  ["store_unavailable", 503, "unavailable_error"],
  ["local_resources", 503, "unavailable_error"],
  ["turn_failed", 500, "server_error"],
];

describe("the status of a failed turn", () => {
  it.each(EXPECTED)("%s is %i %s", (code, status, type) => {
    expect(FAILURE_STATUS[code]).toEqual({ status, type });
  });

  it("has a row for every code, and every provider reason is a code", () => {
    expect(Object.keys(FAILURE_STATUS).sort()).toEqual(EXPECTED.map(([code]) => code).sort());
    for (const reason of ERROR_REASONS) expect(FAILURE_STATUS[reason]).toBeDefined();
  });

  it("never blames the client for the provider: no provider reason but an unfixable request is a 4xx", () => {
    const clientFixable = new Set([
      "context_overflow",
      "payload_too_large",
      "long_context_tier",
      "content_policy_blocked",
    ]);
    for (const reason of ERROR_REASONS) {
      const { status } = FAILURE_STATUS[reason];
      if (clientFixable.has(reason)) expect(status, reason).toBe(400);
      else expect(status, reason).toBeGreaterThanOrEqual(500);
    }
  });

  it.each([
    ["a key cooling for 20 s", provider("rate_limit", 20_000), { "retry-after": "20" }],
    ["a wait shorter than a second rounds up", provider("overloaded", 10), { "retry-after": "1" }],
    ["a rate limit with no known wait", provider("rate_limit"), {}],
    ["a 502 never carries one", provider("server_error", 5_000), {}],
    ["an open circuit says when its probe goes", provider("circuit_open", 42_000), { "retry-after": "42" }],
    [
      "a drain that interrupted the turn",
      interruptFailure(new TurnInterrupt("shutting_down", "stop")),
      { "retry-after": "5" },
    ],
    ["a guardrail halt", guardrailFailure("max_iterations", "stopped"), {}],
  ] as const)("Retry-After: %s", (_label, failure, header) => {
    expect(retryAfterHeader(failure)).toEqual(header);
  });

  it("answers in the OpenAI error shape with the code, the layer and the next step, and the turn in tenax", () => {
    const failure = provider("auth");
    const error = failureError(failure, { session_id: "s_1", turn_id: "t_1" }, { "x-session-id": "s_1" });
    expect(error.status).toBe(502);
    expect(error.headers).toEqual({ "x-session-id": "s_1" });
    const body = error.toJSON();
    expect(body.error).toEqual({
      message: `${failure.message}; what to do: ${failure.next}`,
      type: "provider_error",
      code: "auth",
      param: null,
      layer: "provider",
      next: failure.next,
      retry_after_ms: null,
    });
    expect(body.error.message).toMatch(/the provider main\/big-model failed .*auth/);
    expect(body.error.message).toMatch(/replace the key in providers\.main\.api_keys/);
    expect(body.tenax).toEqual({ session_id: "s_1", turn_id: "t_1" });
    expect(wireError(failure).code).toBe("auth");
  });
});
