import { describe, expect, it } from "vitest";
import { ERROR_REASONS } from "../../llm/classified-error.js";
import { explainFailure, FAILURE_HINTS } from "./failure-hints.js";
import { turnFailure } from "./turn-failure.js";

describe("what a failed turn says", () => {
  it("every classified reason, and unreachable, has its words and what to do", () => {
    for (const reason of [...ERROR_REASONS, "unreachable" as const]) {
      const hint = FAILURE_HINTS[reason];
      expect(hint.says.length, reason).toBeGreaterThan(3);
      expect(hint.todo({ key: "providers.p", provider: "p", model: "m" }).length, reason).toBeGreaterThan(20);
    }
  });

  it("reads the layer, provider, model (slashes and all) and reason back from the turn's error", () => {
    const f = turnFailure(
      "credentials: or/openai/gpt-4o: auth: every key of or is disabled (auth); replace the key in config.yaml",
      null,
    );
    expect(f).toMatchObject({ layer: "credentials", provider: "or", model: "openai/gpt-4o", reason: "auth" });
    const explained = explainFailure(f, "https://openrouter.ai/api/v1");
    expect(explained.headline).toBe(
      "turn failed (credentials layer, auth): or/openai/gpt-4o: the provider refused the API key: every key of or is disabled (auth); replace the key in config.yaml",
    );
    expect(explained.todo).toMatch(/providers\.or\.api_keys/);
  });

  it("a connect failure is unreachable, whatever the classifier called it; a 500 that says ECONNREFUSED is not", () => {
    const refused = turnFailure(
      "provider: sim/echo: server_error: ENOTFOUND: getaddrinfo ENOTFOUND nowhere.invalid",
      null,
    );
    expect(refused.reason).toBe("unreachable");
    expect(explainFailure(refused, "https://nowhere.invalid/v1").headline).toContain(
      "could not connect to sim/echo at https://nowhere.invalid/v1: the host name does not resolve (DNS) (ENOTFOUND)",
    );
    const upstream = turnFailure("provider: sim/echo: server_error: ECONNREFUSED: upstream down", {
      type: "retry_exhausted",
      reason: "server_error",
      provider: "sim",
      model: "echo",
      attempt: 4,
      max_attempts: 4,
      elapsed_ms: 9000,
      context_tokens: 10,
      retry_after_ms: null,
      status: 502,
      message: "ECONNREFUSED: upstream down",
      why: "attempts_spent",
    });
    expect(upstream).toMatchObject({ reason: "server_error", status: 502, attempts: 4 });
    expect(explainFailure(upstream, null).headline).toMatch(
      /\(HTTP 502\).*gave up after 4 attempts in 9\.0 s$/,
    );
  });

  it("a guardrail halt and a failure that is no provider's keep their words", () => {
    const halted = turnFailure(
      "stopped: the turn reached its budget of 3 model calls (agent.max_iterations)",
      null,
    );
    const explained = explainFailure(halted, null);
    expect(explained.headline).toBe(
      "turn failed (guardrails layer): stopped: the turn reached its budget of 3 model calls (agent.max_iterations)",
    );
    expect(explained.todo).toMatch(/agent\.\* limit/);
    expect(explainFailure(turnFailure("the store is corrupt", null), null).headline).toBe(
      "turn failed (agent layer): the store is corrupt",
    );
  });
});
