// No OpenAI parameter is dropped silently, in either mode: every parameter of Chat Completions (as
// the pinned openai package types it: a parameter a new version adds fails the type check here until
// it is sorted) is sent on to the provider, where the simulator's recorded request shows it, or
// refused with a 400 that names it; so is every one Responses takes. Over a real socket, with the
// openai client for the penalties that `model: "tenax"` used to drop; and a run (POST /v1/runs,
// a real gateway process) asks of its turn what the same chat body would.
import OpenAI from "openai";
import type { ChatCompletionCreateParamsBase } from "openai/resources/chat/completions/completions";
import type { ResponseCreateParamsBase } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { simProfile, startGateway, until } from "./helpers/gateway.js";
import { type GatewayApp, startGatewayApp } from "./helpers/gateway-app.js";

type SentBody = Record<string, unknown>;
const sent = (app: GatewayApp, i: number) => app.sim.requests()[i]?.body as SentBody;
const lastSent = (app: GatewayApp) => app.sim.requests().at(-1)?.body as SentBody;

const client = (app: GatewayApp) => new OpenAI({ baseURL: `${app.url}/v1`, apiKey: app.key, maxRetries: 0 });

/**
 * How each mode treats a parameter: `sent` on to the provider as it came (or as `as` says), `refused`
 * by name with a 400, or `own`: Tenax's own part of the request (tested where it is handled).
 */
type Fate = "sent" | "refused" | "own";
interface Row {
  value: unknown;
  tenax: Fate;
  model: Fate;
  /** How a sent value reaches the provider, when not as it came. */
  as?: (body: SentBody) => unknown;
  expected?: unknown;
}

const MESSAGES = [{ role: "user", content: "hi" }];

const CHAT: { [K in keyof ChatCompletionCreateParamsBase]-?: Row } = {
  messages: { value: MESSAGES, tenax: "own", model: "own" },
  model: { value: "tenax", tenax: "own", model: "own" },
  stream: { value: false, tenax: "own", model: "own" },
  stream_options: { value: { include_obfuscation: true }, tenax: "refused", model: "refused" },
  audio: { value: { voice: "alloy", format: "mp3" }, tenax: "refused", model: "refused" },
  modalities: { value: ["text", "audio"], tenax: "refused", model: "refused" },
  frequency_penalty: { value: 0.5, tenax: "sent", model: "sent" },
  presence_penalty: { value: -0.5, tenax: "sent", model: "sent" },
  function_call: { value: "auto", tenax: "refused", model: "refused" },
  functions: { value: [{ name: "f", parameters: {} }], tenax: "refused", model: "refused" },
  logit_bias: { value: { "50256": -100 }, tenax: "refused", model: "sent" },
  logprobs: { value: true, tenax: "refused", model: "sent" },
  top_logprobs: { value: 2, tenax: "refused", model: "sent" },
  max_completion_tokens: {
    value: 12,
    tenax: "sent",
    model: "sent",
    as: (b) => b.max_tokens ?? b.max_completion_tokens,
    expected: 12,
  },
  max_tokens: {
    value: 13,
    tenax: "sent",
    model: "sent",
    as: (b) => b.max_tokens ?? b.max_completion_tokens,
    expected: 13,
  },
  metadata: { value: { team: "blue" }, tenax: "sent", model: "sent" },
  moderation: { value: { input: true }, tenax: "sent", model: "sent" },
  n: { value: 2, tenax: "refused", model: "refused" },
  parallel_tool_calls: { value: false, tenax: "refused", model: "own" },
  prediction: { value: { type: "content", content: "x" }, tenax: "refused", model: "sent" },
  prompt_cache_key: { value: "cache-1", tenax: "sent", model: "sent" },
  prompt_cache_options: { value: { mode: "explicit" }, tenax: "sent", model: "sent" },
  prompt_cache_retention: { value: "24h", tenax: "sent", model: "sent" },
  reasoning_effort: { value: "low", tenax: "sent", model: "sent" },
  response_format: { value: { type: "json_object" }, tenax: "sent", model: "sent" },
  safety_identifier: { value: "user-7", tenax: "sent", model: "sent" },
  seed: { value: 7, tenax: "sent", model: "sent" },
  service_tier: { value: "flex", tenax: "sent", model: "sent" },
  stop: { value: "END", tenax: "sent", model: "sent", expected: ["END"] },
  store: { value: true, tenax: "sent", model: "sent" },
  temperature: { value: 0.3, tenax: "sent", model: "sent" },
  tool_choice: { value: "none", tenax: "refused", model: "own" },
  tools: {
    value: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
    tenax: "refused",
    model: "own",
  },
  top_p: { value: 0.5, tenax: "sent", model: "sent" },
  user: { value: "user-42", tenax: "sent", model: "sent" },
  verbosity: { value: "low", tenax: "sent", model: "sent" },
  web_search_options: { value: { search_context_size: "low" }, tenax: "refused", model: "sent" },
};

async function post(app: GatewayApp, path: string, body: Record<string, unknown>) {
  const response = await fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${app.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function expectRefusedByName(answer: { status: number; body: Record<string, unknown> }, name: string) {
  expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(400);
  const error = answer.body.error as { message: string; param: string | null };
  expect(error.message).toContain(name);
  expect(String(error.param)).toMatch(new RegExp(`^${name}`));
}

describe("every Chat Completions parameter is sent on or refused by name", () => {
  for (const mode of ["tenax", "model"] as const) {
    it(`model: ${mode === "tenax" ? "tenax (an agent turn)" : "sim/echo (one model call)"}`, async () => {
      const app = await startGatewayApp();
      const model = mode === "tenax" ? "tenax" : "sim/echo";
      for (const [name, row] of Object.entries(CHAT) as [string, Row][]) {
        const fate = row[mode];
        if (fate === "own") continue;
        const before = app.sim.requests().length;
        const answer = await post(app, "/v1/chat/completions", {
          model,
          messages: MESSAGES,
          [name]: row.value,
        });
        if (fate === "refused") {
          expectRefusedByName(answer, name);
          expect(app.sim.requests()).toHaveLength(before);
          continue;
        }
        expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(200);
        const body = lastSent(app);
        expect(row.as ? row.as(body) : body[name], name).toEqual(row.expected ?? row.value);
      }
    });
  }
});

describe("model tenax sends the penalties and passed-on fields with every model call of the turn", () => {
  it("frequency_penalty, presence_penalty, metadata, store and reasoning_effort reach both calls", async () => {
    const app = await startGatewayApp();
    app.sim.script([
      { type: "tool_calls", calls: [{ name: "todo", arguments: { action: "list" } }] },
      { type: "reply", text: "done" },
    ]);
    const answer = await client(app).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "list my todos" }],
      frequency_penalty: 0.4,
      presence_penalty: 0.6,
      metadata: { run: "nightly" },
      store: false,
      reasoning_effort: "low",
    });
    expect(answer.choices[0]?.message.content).toBe("done");
    expect(app.sim.requests()).toHaveLength(2);
    for (const i of [0, 1])
      expect(sent(app, i)).toMatchObject({
        frequency_penalty: 0.4,
        presence_penalty: 0.6,
        metadata: { run: "nightly" },
        store: false,
        reasoning_effort: "low",
      });
  });

  it("a penalty out of range is a 400 naming it, in both modes", async () => {
    const app = await startGatewayApp();
    for (const model of ["tenax", "sim/echo"]) {
      const answer = await post(app, "/v1/chat/completions", {
        model,
        messages: MESSAGES,
        presence_penalty: 3,
      });
      expectRefusedByName(answer, "presence_penalty");
      expect((answer.body.error as { message: string }).message).toContain("from -2 to 2");
    }
    expect(app.sim.requests()).toHaveLength(0);
  });
});

/** Every parameter of the Responses API, as the pinned openai package types it. */
const RESPONSES: { [K in keyof ResponseCreateParamsBase]-?: Row } = {
  input: { value: "hi", tenax: "own", model: "own" },
  model: { value: "tenax", tenax: "own", model: "own" },
  instructions: { value: "Be brief.", tenax: "own", model: "own" },
  previous_response_id: { value: null, tenax: "own", model: "own" },
  store: { value: true, tenax: "own", model: "own" },
  stream: { value: false, tenax: "own", model: "own" },
  metadata: { value: { team: "blue" }, tenax: "own", model: "own" },
  max_output_tokens: {
    value: 20,
    tenax: "sent",
    model: "sent",
    as: (b) => b.max_tokens ?? b.max_completion_tokens,
    expected: 20,
  },
  temperature: { value: 0.3, tenax: "sent", model: "sent" },
  top_p: { value: 0.5, tenax: "sent", model: "sent" },
  user: { value: "user-42", tenax: "sent", model: "sent" },
  parallel_tool_calls: { value: false, tenax: "own", model: "own" },
  tool_choice: { value: "none", tenax: "own", model: "own" },
  tools: { value: [], tenax: "own", model: "own" },
  text: { value: { verbosity: "low" }, tenax: "refused", model: "refused" },
  stream_options: { value: { include_obfuscation: true }, tenax: "refused", model: "refused" },
  background: { value: true, tenax: "refused", model: "refused" },
  context_management: { value: [{ type: "compaction" }], tenax: "refused", model: "refused" },
  conversation: { value: "conv_1", tenax: "refused", model: "refused" },
  include: { value: ["reasoning.encrypted_content"], tenax: "refused", model: "refused" },
  moderation: { value: { input: true }, tenax: "refused", model: "refused" },
  prompt: { value: { id: "pmpt_1" }, tenax: "refused", model: "refused" },
  prompt_cache_key: { value: "cache-1", tenax: "refused", model: "refused" },
  prompt_cache_options: { value: { mode: "explicit" }, tenax: "refused", model: "refused" },
  prompt_cache_retention: { value: "24h", tenax: "refused", model: "refused" },
  reasoning: { value: { effort: "low" }, tenax: "refused", model: "refused" },
  safety_identifier: { value: "user-7", tenax: "refused", model: "refused" },
  service_tier: { value: "flex", tenax: "refused", model: "refused" },
  top_logprobs: { value: 2, tenax: "refused", model: "refused" },
  truncation: { value: "auto", tenax: "refused", model: "refused" },
};

describe("every Responses parameter is sent on or refused by name", () => {
  for (const mode of ["tenax", "model"] as const) {
    it(`model: ${mode === "tenax" ? "tenax" : "sim/echo"}`, async () => {
      const app = await startGatewayApp();
      const model = mode === "tenax" ? "tenax" : "sim/echo";
      for (const [name, row] of Object.entries(RESPONSES) as [string, Row][]) {
        const fate = row[mode];
        if (fate === "own") continue;
        const before = app.sim.requests().length;
        const answer = await post(app, "/v1/responses", { model, input: "hi", [name]: row.value });
        if (fate === "refused") {
          expectRefusedByName(answer, name);
          expect(app.sim.requests()).toHaveLength(before);
          continue;
        }
        expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(200);
        const body = lastSent(app);
        expect(row.as ? row.as(body) : body[name], name).toEqual(row.expected ?? row.value);
      }
    });
  }
});

describe("a run (POST /v1/runs) asks of its turn what a chat asks", () => {
  it("the client's system text, max_tokens, sampling, penalties and passed-on fields reach the model call", async () => {
    requireBuild();
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const submitted = await gw.fetch("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages: [
          { role: "system", content: "Answer in one word." },
          { role: "user", content: "hello" },
        ],
        max_tokens: 30,
        temperature: 0.2,
        frequency_penalty: 0.7,
        metadata: { from: "runs" },
      }),
    });
    expect(submitted.status).toBe(202);
    await until(() => sim.requests().length > 0);
    const body = sim.requests()[0]?.body as SentBody & {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(body.max_tokens ?? body.max_completion_tokens).toBe(30);
    expect(body).toMatchObject({ temperature: 0.2, frequency_penalty: 0.7, metadata: { from: "runs" } });
    const system = body.messages.filter((m) => m.role === "system").map((m) => String(m.content));
    expect(system.join("\n")).toContain("Answer in one word.");
  });
});
