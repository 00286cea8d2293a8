// A failed turn is an error to every client, never an empty success: a real `tenax gateway run`
// over a simulator that fails on cue (a 503 every time, a 401 on every key, a rate limit that cools
// every key, a context the model cannot hold, a port nothing listens on), asked through the three
// client libraries people use, streamed and not. Each one raises, with the status and the code the
// library exposes; a success still works with all three, and only a reply the output limit really
// cut says finish_reason "length".
import { randomBytes } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type SimModel, type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import type { SimStep } from "../src/llm/simulator/steps.js";
import { requireBuild } from "./helpers/cli.js";
import { askEvery, type Outcome } from "./helpers/clients.js";
import { freePort } from "./helpers/dashboard.js";
import { type GatewayProcess, startGateway, until } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

// The gateway child gets it, and its config names it.
const KEY = `tk-${randomBytes(12).toString("hex")}`;
const AUTH = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

const sims: Simulator[] = [];
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

interface Setup {
  /** The provider's base URL; a started simulator's when left out. */
  baseUrl?: string;
  models?: Record<string, SimModel>;
  /** Extra top-level YAML. */
  extra?: string;
  gateway?: string;
}

/** A gateway whose one model is a simulator (or `baseUrl`), one attempt per call so failures are quick. */
async function gatewayOn(setup: Setup = {}): Promise<{ gw: GatewayProcess; sim: Simulator }> {
  const sim = await startSimulator(setup.models ? { models: setup.models } : {});
  sims.push(sim);
  const paths = profileWith(
    [
      "model: { provider: sim, name: echo }",
      "providers:",
      `  sim: { type: openai, base_url: "${setup.baseUrl ?? sim.url}", api_keys: ["sim-key-1"] }`,
      "retry: { max_attempts: 1 }",
      `gateway: { api_key: "\${TENAX_API_KEY}"${setup.gateway ? `, ${setup.gateway}` : ""} }`,
      setup.extra ?? "",
    ].join("\n"),
  );
  return { gw: await startGateway(paths.home, undefined, undefined, { TENAX_API_KEY: KEY }), sim };
}

/** Off for the tests that send every client to one failing model (see each). */
const NO_BREAKER = "breaker: { enabled: false }";

const steps = (step: SimStep, count = 20): SimStep[] => Array.from({ length: count }, () => step);

/** Every outcome raised with `code` (and `status` where the library reports one), with no reply. */
function expectRaised(outcomes: Outcome[], code: string, status: number) {
  for (const o of outcomes) {
    const label = `${o.client}${o.stream ? " streamed" : ""}`;
    expect(o.raised, `${label} raised`).toBe(true);
    expect(o.code, `${label} code`).toBe(code);
    expect(o.text, `${label} got no reply`).toBe("");
    // Never the finish of a whole (or cut) reply.
    expect(
      o.finishReasons.filter((r) => r === "stop" || r === "length"),
      label,
    ).toEqual([]);
    // Not streamed, the HTTP status is the error's; streamed, the headers were out before it failed.
    if (!o.stream) expect(o.status, `${label} status`).toBe(status);
  }
  return outcomes;
}

describe("a failed turn raises in every client, streamed and not", () => {
  it("a provider answering 503 every time: 502 server_error, naming the retry layer", async () => {
    // Every client must meet the retry layer's failure: the breaker would rightly refuse the later
    // ones with circuit_open (test/gateway-breaker.test.ts), so it is off here.
    const { gw, sim } = await gatewayOn({ extra: NO_BREAKER });
    sim.script(steps({ type: "error", status: 503 }));
    const outcomes = expectRaised(await askEvery(gw.url, KEY, "hello"), "server_error", 502);
    expect(outcomes[0]?.message).toMatch(/the retry layer gave up on sim\/echo after 1 attempt .*503/);
    expect(outcomes[0]?.message).toMatch(/what to do: retry later/);
  });

  it("a 401 on every key: 502 auth from the credentials layer, telling the operator to replace the key", async () => {
    const { gw, sim } = await gatewayOn();
    sim.script(
      steps({
        type: "error",
        status: 401,
        body: {
          error: {
            message: "Incorrect API key provided",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        },
      }),
    );
    const outcomes = expectRaised(await askEvery(gw.url, KEY, "hello"), "auth", 502);
    expect(outcomes[0]?.message).toMatch(
      /the credentials layer gave up on sim\/echo: every key of sim is disabled/,
    );
    expect(outcomes[0]?.message).toMatch(/replace the key in providers\.sim\.api_keys/);
  });

  it("a rate limit that cools every key: 503 rate_limit with Retry-After", async () => {
    const { gw, sim } = await gatewayOn();
    sim.script(steps({ type: "error", status: 429, headers: { "retry-after": "20" } }));
    const outcomes = expectRaised(await askEvery(gw.url, KEY, "hello"), "rate_limit", 503);
    expect(outcomes[0]?.message).toMatch(/every key of sim is cooling down/);
    const raw = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ messages: [{ role: "user", content: "again" }] }),
    });
    expect(raw.status).toBe(503);
    expect(Number(raw.headers.get("retry-after"))).toBeGreaterThanOrEqual(15);
    expect(Number(raw.headers.get("retry-after"))).toBeLessThanOrEqual(20);
    const body = (await raw.json()) as { error: { code: string; retry_after_ms: number; layer: string } };
    expect(body.error).toMatchObject({ code: "rate_limit", layer: "credentials" });
    expect(body.error.retry_after_ms).toBeGreaterThan(14_000);
  });

  it("a conversation the model cannot hold and nothing could shrink: 400 context_overflow", async () => {
    // The provider's window is smaller than any request, so it refuses each one as too long.
    const { gw } = await gatewayOn({ models: { echo: { context_window: 40 } } });
    const outcomes = expectRaised(await askEvery(gw.url, KEY, "hello"), "context_overflow", 400);
    expect(outcomes[0]?.message).toMatch(/the conversation is too large for sim\/echo .*compression/);
  });

  it("a provider port nothing listens on: 502 unreachable, saying where it could not connect", async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}/v1`;
    const { gw } = await gatewayOn({ baseUrl, extra: NO_BREAKER });
    const outcomes = expectRaised(await askEvery(gw.url, KEY, "hello"), "unreachable", 502);
    for (const o of outcomes)
      expect(o.message).toContain(
        `could not connect to ${baseUrl} (connection refused): is the provider running?`,
      );
  });

  it("a failure after part of the reply was streamed still raises, with no finish reason", async () => {
    const { gw, sim } = await gatewayOn();
    const outcomes = await askEvery(gw.url, KEY, "look it up", () =>
      sim.script([
        { type: "tool_calls", text: "Let me look. ", calls: [{ name: "no_such_tool", arguments: {} }] },
        { type: "error", status: 503 },
      ]),
    );
    for (const o of outcomes) {
      const label = `${o.client}${o.stream ? " streamed" : ""}`;
      expect(o.raised, label).toBe(true);
      expect(o.code, label).toBe("server_error");
      expect(
        o.finishReasons.filter((r) => r === "stop" || r === "length"),
        label,
      ).toEqual([]);
      if (o.stream) expect(o.text, label).toBe("Let me look. ");
      else expect(o.status, label).toBe(502);
    }
  });
});

describe("a turn that completes", () => {
  it("answers every client, streamed and not, with finish_reason stop", async () => {
    const { gw } = await gatewayOn();
    for (const o of await askEvery(gw.url, KEY, "hello")) {
      const label = `${o.client}${o.stream ? " streamed" : ""}`;
      expect(o.raised, `${label}: ${o.message}`).toBe(false);
      expect(o.text, label).toBe("echo: hello");
      expect(o.finishReasons, label).toContain("stop");
    }
  });

  it("a reply the output limit really cut is a 200 with finish_reason length", async () => {
    const { gw, sim } = await gatewayOn({ extra: "agent: { max_continuations: 0 }" });
    for (const o of await askEvery(gw.url, KEY, "tell me everything", () =>
      sim.script([{ type: "reply", text: "the first half of", finish_reason: "length" }]),
    )) {
      const label = `${o.client}${o.stream ? " streamed" : ""}`;
      expect(o.raised, `${label}: ${o.message}`).toBe(false);
      expect(o.text, label).toBe("the first half of");
      expect(o.finishReasons, label).toContain("length");
    }
  });
});

describe("the wire of a failed turn", () => {
  it("not streamed: the OpenAI error shape, the layer and the next step, and X-Session-Id of the stored turn", async () => {
    const { gw, sim } = await gatewayOn();
    sim.script(steps({ type: "error", status: 503 }, 2));
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ messages: [{ role: "user", content: "hello" }] }),
    });
    expect(response.status).toBe(502);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const session = response.headers.get("x-session-id") ?? "";
    expect(session).toMatch(/^s_/);
    const body = (await response.json()) as {
      error: Record<string, unknown>;
      tenax: Record<string, unknown>;
      choices?: unknown;
    };
    expect(body.choices).toBeUndefined();
    expect(body.error).toMatchObject({
      type: "provider_error",
      code: "server_error",
      layer: "retry",
      retry_after_ms: null,
    });
    expect(String(body.error.next)).toMatch(/retry later/);
    expect(body.tenax).toMatchObject({ session_id: session, status: "failed", partial: true, reply: "" });
    // The turn and its marker are stored under that session.
    const stored = (await (await fetch(`${gw.url}/api/sessions/${session}`, { headers: AUTH })).json()) as {
      messages: { role: string; content: string }[];
    };
    expect(stored.messages.map((m) => m.role)).toEqual(["user", "marker"]);
    expect(stored.messages[1]?.content).toMatch(/^turn failed: the retry layer gave up/);

    // Streamed: the headers are out, so the failure is the last event; no finish reason, no [DONE].
    const streamed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "hello" }] }),
    });
    expect(streamed.status).toBe(200);
    const text = await streamed.text();
    expect(text).not.toContain("[DONE]");
    const events = text
      .split("\n\n")
      .filter((b) => b.startsWith("data: "))
      .map(
        (b) =>
          JSON.parse(b.slice(6)) as {
            error?: Record<string, unknown>;
            choices?: { finish_reason: unknown }[];
          },
      );
    expect(events.at(-1)?.error).toMatchObject({
      code: "server_error",
      type: "provider_error",
      layer: "retry",
    });
    expect(events.flatMap((e) => e.choices ?? []).filter((c) => c.finish_reason !== null)).toEqual([]);
  });

  it("a halted turn (agent.max_iterations) is a 422 max_iterations from the guardrails", async () => {
    const { gw, sim } = await gatewayOn({ extra: "agent: { max_iterations: 1 }" });
    sim.script([{ type: "tool_calls", calls: [{ name: "no_such_tool", arguments: {} }] }]);
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ messages: [{ role: "user", content: "loop" }] }),
    });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      code: "max_iterations",
      type: "guardrail_error",
      layer: "guardrails",
    });
    expect(String(body.error.message)).toMatch(/agent\.max_iterations/);
  });

  it("a turn the drain had to interrupt is a 503 shutting_down with Retry-After", async () => {
    const { gw, sim } = await gatewayOn({ gateway: "drain_timeout: 0.3" });
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const answer = fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ messages: [{ role: "user", content: "wait" }] }),
    });
    await until(() => sim.requests().length === 1);
    gw.child.kill("SIGTERM");
    const response = await answer;
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(response.headers.get("x-session-id")).toMatch(/^s_/);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      code: "shutting_down",
      layer: "interrupt",
      type: "unavailable_error",
    });
    expect(await gw.exited).toBe(0);
  });
});

describe("a failed run of the runs API", () => {
  it("ends with run.finished and a state that carry the same error as a chat completion", async () => {
    const { gw, sim } = await gatewayOn();
    sim.script(steps({ type: "error", status: 503 }, 2));
    const submitted = await fetch(`${gw.url}/v1/runs`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ messages: [{ role: "user", content: "hello" }] }),
    });
    expect(submitted.status).toBe(202);
    const run = (await submitted.json()) as { run_id: string };
    // The events stream ends by itself after run.finished.
    const frames = (await (await fetch(`${gw.url}/v1/runs/${run.run_id}/events`, { headers: AUTH })).text())
      .split("\n\n")
      .filter((f) => f.includes("data: "));
    const finished = JSON.parse(frames.at(-1)?.split("data: ")[1] ?? "null") as Record<string, unknown>;
    const expected = { code: "server_error", type: "provider_error", layer: "retry", retry_after_ms: null };
    expect(finished).toMatchObject({ type: "run.finished", status: "failed", error: expected });
    expect(String((finished.error as { message: string }).message)).toMatch(
      /the retry layer gave up on sim\/echo/,
    );
    const stored = (await (
      await fetch(`${gw.url}/v1/runs/${run.run_id}`, { headers: AUTH })
    ).json()) as Record<string, unknown>;
    expect(stored).toMatchObject({ status: "failed", error: expected });
    expect(stored.error).toEqual(finished.error);
  });
});
