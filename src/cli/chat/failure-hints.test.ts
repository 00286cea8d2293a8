import { describe, expect, it } from "vitest";
import { guardrailFailure, thrownFailure } from "../../agent/turn-failure.js";
import { ERROR_REASONS, ProviderError } from "../../llm/classified-error.js";
import { classify } from "../../llm/classify.js";
import { explainFailure, FAILURE_HINTS } from "./failure-hints.js";
import { turnFailure } from "./turn-failure.js";

/** The failure a turn builds when a provider call gave up this way. */
function failed(
  status: number | null,
  body: unknown,
  data: Record<string, unknown> = {},
  transport?: { code: string; message: string },
) {
  const classified = classify({
    status,
    headers: {},
    body,
    transport: transport ?? null,
    endpoint: "http://127.0.0.1:9/v1",
  });
  const error = new ProviderError(classified, "or", "openai/gpt-4o");
  Object.assign(error.data, data);
  return thrownFailure(error);
}

describe("what a failed turn says", () => {
  it("every classified reason has its words and what to do", () => {
    for (const reason of ERROR_REASONS) {
      const hint = FAILURE_HINTS[reason];
      expect(hint.says.length, reason).toBeGreaterThan(3);
      expect(hint.todo({ key: "providers.p", provider: "p", model: "m" }).length, reason).toBeGreaterThan(20);
    }
  });

  it("takes the layer, provider, model (slashes and all), reason and status from the turn's failure", () => {
    const f = turnFailure(
      failed(401, { error: { message: "invalid key" } }, { layer: "credentials" }),
      null,
      null,
    );
    expect(f).toMatchObject({
      layer: "credentials",
      provider: "or",
      model: "openai/gpt-4o",
      reason: "auth",
      status: 401,
    });
    const explained = explainFailure(f);
    expect(explained.headline).toMatch(
      /^turn failed \(credentials layer, auth\): or\/openai\/gpt-4o: the provider refused the API key \(HTTP 401\): /,
    );
    expect(explained.todo).toMatch(/providers\.or\.api_keys/);
  });

  it("an unreachable provider is named with its address and the cause; the give-up event adds the attempts", () => {
    const refused = failed(
      null,
      null,
      {},
      { code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:9" },
    );
    const f = turnFailure(refused, null, {
      type: "retry_exhausted",
      reason: "unreachable",
      provider: "or",
      model: "openai/gpt-4o",
      attempt: 4,
      max_attempts: 4,
      elapsed_ms: 9000,
      context_tokens: 10,
      retry_after_ms: null,
      status: null,
      message: refused.classified?.message ?? "",
      why: "attempts_spent",
    });
    expect(f).toMatchObject({ reason: "unreachable", attempts: 4 });
    const explained = explainFailure(f);
    expect(explained.headline).toBe(
      "turn failed (provider layer, unreachable): or/openai/gpt-4o: could not connect to http://127.0.0.1:9/v1 (connection refused): is the provider running?; gave up after 4 attempts in 9.0 s",
    );
    expect(explained.todo).toMatch(/providers\.or\.base_url/);
  });

  it("a guardrail halt and a failure that is no provider's keep their words and say what to do", () => {
    const halted = turnFailure(
      guardrailFailure(
        "max_iterations",
        "stopped: the turn reached its budget of 3 model calls (agent.max_iterations)",
      ),
      null,
      null,
    );
    const explained = explainFailure(halted);
    expect(explained.headline).toBe(
      "turn failed (guardrails layer): the guardrails halted the turn: stopped: the turn reached its budget of 3 model calls (agent.max_iterations)",
    );
    expect(explained.todo).toMatch(/agent\.max_iterations/);
    expect(explainFailure(turnFailure(null, "the store is corrupt", null)).headline).toBe(
      "turn failed (agent layer): the store is corrupt",
    );
  });
});
