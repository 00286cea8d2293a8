// The circuit breaker in a real `tenax gateway run` against simulators over HTTP: a model failing
// with 503s trips its breaker, and later turns reach the fallback with at most half the calls to
// the failing model that the retry budget alone makes (counted by the simulator, with the breaker
// and without); /health and `tenax status` list the model's circuit; with no fallback left a call
// fails at once with `circuit_open` and a Retry-After, sending the failing model nothing.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import type { SimStep } from "../src/llm/simulator/steps.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const sims: Simulator[] = [];
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

const TURNS = 4;
const ATTEMPTS = 2;
const failing: SimStep[] = Array.from({ length: 100 }, () => ({ type: "error", status: 503 }));

async function gatewayOn(options: { fallback: boolean; breaker: string }) {
  const bad = await startSimulator();
  const good = await startSimulator();
  sims.push(bad, good);
  bad.script(failing);
  const paths = profileWith(
    [
      "model: { provider: bad, name: echo }",
      "providers:",
      `  bad: { type: openai, base_url: "${bad.url}", api_keys: ["sk-bad-1"] }`,
      `  good: { type: openai, base_url: "${good.url}", api_keys: ["sk-good-1"] }`,
      options.fallback ? "fallback: [{ provider: good, name: echo }]" : "",
      `retry: { max_attempts: ${ATTEMPTS} }`,
      `breaker: ${options.breaker}`,
      "health: { provider_probe: off }",
    ].join("\n"),
  );
  const gw = await startGateway(paths.home);
  return { gw, bad, good, home: paths.home };
}

function ask(gw: GatewayProcess, text: string): Promise<Response> {
  return gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  });
}

type Health = {
  status: string;
  components: {
    providers: { status: string; models: { provider: string; model: string; circuit: string }[] };
  };
};

describe("the circuit breaker in a running gateway", () => {
  it("a model failing with 503s trips it: later turns reach the fallback with at most half the calls", async () => {
    const calls: Record<string, number> = {};
    for (const withBreaker of [false, true]) {
      const { gw, bad, good } = await gatewayOn({
        fallback: true,
        breaker: withBreaker ? `{ failures: ${ATTEMPTS}, cooldown: 300 }` : "{ enabled: false }",
      });
      for (let turn = 0; turn < TURNS; turn++) {
        const res = await ask(gw, `turn ${turn}`);
        expect(res.status).toBe(200);
        const body = (await res.json()) as { choices: { message: { content: string } }[] };
        expect(body.choices[0]?.message.content).toContain(`turn ${turn}`);
      }
      expect(good.requests()).toHaveLength(TURNS);
      calls[withBreaker ? "with" : "without"] = bad.requests().length;
      if (withBreaker) {
        const health = (await (await gw.fetch("/health")).json()) as Health;
        expect(health.components.providers.models).toContainEqual(
          expect.objectContaining({ provider: "bad", model: "echo", circuit: "open" }),
        );
        expect(health.components.providers.models).toContainEqual(
          expect.objectContaining({ provider: "good", model: "echo", circuit: "closed" }),
        );
        // The fallback answers: degraded, not down.
        expect(health.components.providers.status).toBe("degraded");
      }
    }
    // The retry budget alone: every turn pays every attempt.
    expect(calls.without).toBe(TURNS * ATTEMPTS);
    // With the breaker, the first turn's attempts open it and no later turn calls the model.
    expect(calls.with).toBe(ATTEMPTS);
    expect(calls.with).toBeLessThanOrEqual((calls.without ?? 0) / 2);
  });

  it("with no fallback: circuit_open with Retry-After, nothing sent, and tenax status shows the open circuit", async () => {
    const { gw, bad, home } = await gatewayOn({
      fallback: false,
      breaker: `{ failures: ${ATTEMPTS}, cooldown: 120 }`,
    });
    const first = await ask(gw, "first");
    expect(first.status).toBe(502);
    const sent = bad.requests().length;
    expect(sent).toBe(ATTEMPTS);
    const refused = await ask(gw, "second");
    expect(refused.status).toBe(503);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(100);
    expect(retryAfter).toBeLessThanOrEqual(120);
    const body = (await refused.json()) as {
      error: { code: string; type: string; message: string; layer: string };
    };
    expect(body.error).toMatchObject({ code: "circuit_open", layer: "breaker" });
    expect(body.error.message).toMatch(/bad\/echo.*circuit breaker is open.*tried again at/);
    expect(bad.requests()).toHaveLength(sent);
    const health = (await (await gw.fetch("/health")).json()) as Health;
    // No model of the chain can answer.
    expect(health.components.providers.status).toBe("down");
    const status = await tenaxAsync(home, ["status", "--json"]);
    const report = JSON.parse(status.stdout) as Health;
    expect(report.components.providers.models).toContainEqual(
      expect.objectContaining({ provider: "bad", model: "echo", circuit: "open" }),
    );
    expect(status.status).toBe(2);
  });
});
