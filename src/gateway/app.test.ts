// The gateway's app in-process (`app.inject()`, no socket) over a real agent, store and simulator,
// with an injected clock: routing, auth and the web checks, the one error shape (Fastify's own
// refusals and zod's), /v1/models, and the chat route's dispatch on `model`.
import { afterEach, describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openAgent } from "../agent/setup.js";
import { configSchema } from "../config/schema.js";
import type { App } from "../http/app.js";
import { startSimulator } from "../llm/simulator/server.js";
import { buildGatewayApp } from "./app.js";
import { Gateway } from "./gateway.js";
import type { ModelCallRequest } from "./model-call-handler.js";
import { RunRegistry } from "./runs.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const KEY = "test-key";
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const auth = { authorization: `Bearer ${KEY}` };
const json = { ...auth, "content-type": "application/json" };

async function setup(
  options: { gateway?: Record<string, unknown>; modelCall?: (r: ModelCallRequest) => Promise<void> } = {},
) {
  const sim = await startSimulator({
    models: { main: { context_window: 64_000 }, spare: { context_window: 32_000 } },
  });
  cleanups.push(() => sim.close());
  const config = configSchema.parse({
    model: { provider: "sim", name: "main" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        models: {
          main: { context_window: 64_000, max_output_tokens: 2_000 },
          spare: { context_window: 32_000 },
        },
      },
    },
    retry: { max_attempts: 1 },
    gateway: { api_key: KEY, ...options.gateway },
  });
  const opened = await openAgent(tempProfile(), config, { storeSettings: { integrityCheckTimeoutMs: 0 } });
  cleanups.push(() => opened.close());
  const gateway = new Gateway({ agent: opened.agent, store: opened.store, config, cwd: process.cwd() });
  const runs = new RunRegistry({ store: opened.store, gateway });
  const app: App = buildGatewayApp({
    gateway,
    agent: opened.agent,
    store: opened.store,
    config,
    version: "test",
    now: () => NOW,
    runs,
    bodyLimit: 64 * 1024,
    ...(options.modelCall ? { modelCall: options.modelCall } : {}),
  });
  cleanups.push(async () => {
    await runs.settled();
    await app.close();
  });
  return { app, sim, store: opened.store };
}

const chat = (body: unknown, headers: Record<string, string> = json) => ({
  method: "POST" as const,
  url: "/v1/chat/completions",
  headers,
  payload: typeof body === "string" ? body : JSON.stringify(body),
});

const hello = { messages: [{ role: "user", content: "hello there" }] };

describe("the gateway app in-process", () => {
  it("routes: the live check needs no key, the rest do; a wrong method is 405 with Allow, an unknown path 404", async () => {
    const { app } = await setup();
    expect((await app.inject({ url: "/health/live" })).json()).toEqual({ status: "ok" });
    expect((await app.inject({ method: "HEAD", url: "/health/live" })).statusCode).toBe(200);
    // Public, and so is its 405: a wrong method there is said without a key.
    expect((await app.inject({ method: "POST", url: "/health/live" })).statusCode).toBe(405);
    const refused = await app.inject({ url: "/v1/models" });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers["www-authenticate"]).toBe("Bearer");
    expect(refused.json().error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
    const wrong = await app.inject({ method: "DELETE", url: "/v1/chat/completions", headers: auth });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe("POST");
    expect(wrong.json().error).toMatchObject({ code: "method_not_allowed" });
    const unknown = await app.inject({ url: "/v1/nothing", headers: auth });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ type: "not_found_error", code: "unknown_route" });
    // An unknown path is still behind the key: nothing is learnt without it.
    expect((await app.inject({ url: "/v1/nothing" })).statusCode).toBe(401);
    expect((await app.inject({ url: "/api/capabilities/", headers: auth })).json()).toEqual({
      version: "test",
      capabilities: [
        "chat.completions",
        "chat.completions.stream",
        "models",
        "responses",
        "sessions",
        "runs",
        // Always served (they answer that no platform is configured): listed too.
        "platforms",
      ],
    });
  });

  it("runs the web checks before the key: a foreign Host is 421, a foreign Origin 403", async () => {
    const { app } = await setup();
    const host = await app.inject({ url: "/health/live", headers: { host: "evil.example" } });
    expect(host.statusCode).toBe(421);
    expect(host.json().error.code).toBe("misdirected_request");
    const origin = await app.inject({ url: "/v1/models", headers: { origin: "https://evil.example" } });
    expect(origin.statusCode).toBe(403);
    expect(origin.json().error.code).toBe("origin_not_allowed");
  });

  it("answers Fastify's and zod's refusals in the OpenAI shape, naming the field", async () => {
    const { app } = await setup();
    const plain = await app.inject(chat(hello, { ...auth, "content-type": "text/plain" }));
    expect(plain.statusCode).toBe(415);
    expect(plain.json().error).toMatchObject({
      type: "invalid_request_error",
      code: "unsupported_media_type",
    });
    const none = await app.inject({ method: "POST", url: "/v1/chat/completions", headers: auth });
    expect(none.statusCode).toBe(415);
    expect(none.json().error.message).toMatch(/has no Content-Type/);
    const bad = await app.inject(chat("{nope"));
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe("invalid_json");
    const big = await app.inject(chat({ messages: [{ role: "user", content: "x".repeat(70_000) }] }));
    expect(big.statusCode).toBe(413);
    expect(big.json().error.code).toBe("request_too_large");
    const deep = await app.inject(chat(`{"messages":${"[".repeat(100)}${"]".repeat(100)}}`));
    expect(deep.statusCode).toBe(400);
    expect(deep.json().error.code).toBe("json_too_deep");
    const role = await app.inject(chat({ messages: [{ role: "robot", content: "x" }] }));
    expect(role.statusCode).toBe(400);
    expect(role.json().error).toMatchObject({
      type: "invalid_request_error",
      code: "invalid_field",
      param: "messages[0].role",
      message: "messages[0].role: must be user, assistant, system or developer",
    });
    const extra = await app.inject(chat({ ...hello, colour: "blue" }));
    expect(extra.json().error).toMatchObject({
      code: "unknown_field",
      message: expect.stringContaining("colour"),
    });
    const tool = { type: "function", function: { name: "look", parameters: { type: "object" } } };
    const tools = await app.inject(chat({ ...hello, model: "tenax", tools: [tool] }));
    expect(tools.json().error).toMatchObject({
      code: "unsupported_field",
      message: expect.stringMatching(/PROVIDER\/NAME/),
    });
    const page = await app.inject({ url: "/api/sessions?limit=0", headers: auth });
    expect(page.statusCode).toBe(400);
    expect(page.json().error.code).toBe("invalid_query");
    const key = await app.inject({
      method: "POST",
      url: "/v1/runs",
      headers: { ...json, "idempotency-key": "k".repeat(300) },
      payload: JSON.stringify(hello),
    });
    expect(key.statusCode).toBe(400);
    expect(key.json().error.code).toBe("invalid_idempotency_key");
  });

  it("/api/sessions: every session has a title (a `tenax chat` one its first question) and its last turn", async () => {
    const { app, store } = await setup();
    const id = await store.createSession({ source: "cli" });
    const turn = await store.startTurn(id, 60_000, "pid:1", {
      role: "user",
      content: "why is the sky\nblue?",
    });
    await store.updateTurn({ id: turn, status: "failed", error: "rate_limit: refused (429)" });
    const listed = (await app.inject({ url: "/api/sessions", headers: auth })).json();
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({
      id,
      title: "why is the sky blue?",
      title_source: "first_message",
      last_turn: { id: turn, state: "failed", error: "rate_limit: refused (429)" },
    });
    const one = (await app.inject({ url: `/api/sessions/${id}`, headers: auth })).json();
    expect(one).toMatchObject({ title: "why is the sky blue?", last_turn: { state: "failed" } });
  });

  it("lists tenax and every configured model with its window, and finds an id with a slash", async () => {
    const { app } = await setup();
    const list = (await app.inject({ url: "/v1/models", headers: auth })).json();
    const created = Math.floor(NOW / 1000);
    expect(list.object).toBe("list");
    expect(list.data.map((m: { id: string }) => m.id)).toEqual(["tenax", "sim/main", "sim/spare"]);
    expect(list.data[0]).toMatchObject({
      id: "tenax",
      object: "model",
      owned_by: "tenax",
      created,
      context_window: 64_000,
    });
    expect(list.data[0].description).toMatch(/agent/);
    // Not in the chain, still served: every model a provider lists.
    expect(list.data[2]).toMatchObject({ owned_by: "sim", context_window: 32_000, max_output_tokens: 4_096 });
    const one = await app.inject({ url: "/v1/models/sim/main", headers: auth });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ id: "sim/main", context_window: 64_000, max_output_tokens: 2_000 });
    expect((await app.inject({ url: "/v1/models/tenax", headers: auth })).json().id).toBe("tenax");
    const missing = await app.inject({ url: "/v1/models/sim/nope", headers: auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toMatchObject({
      code: "model_not_found",
      message: expect.stringContaining("sim/main"),
    });
  });

  it("dispatches on model: tenax or none is an agent turn, an unknown id a 404 listing the valid ones", async () => {
    const { app, sim } = await setup();
    const turn = await app.inject(chat({ ...hello, model: "tenax" }));
    expect(turn.statusCode).toBe(200);
    const body = turn.json();
    expect(body).toMatchObject({
      object: "chat.completion",
      created: Math.floor(NOW / 1000),
      model: "sim/main",
    });
    expect(body.choices[0].message.content).toContain("hello there");
    expect(turn.headers["x-session-id"]).toBe(body.tenax.session_id);
    expect((await app.inject(chat(hello))).statusCode).toBe(200);
    const calls = sim.requests().length;
    const unknown = await app.inject(chat({ ...hello, model: "gpt-4o" }));
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ type: "not_found_error", code: "model_not_found" });
    expect(unknown.json().error.message).toMatch(/tenax, sim\/main, sim\/spare/);
    expect(sim.requests().length).toBe(calls);
    // A PROVIDER/NAME call is one model call (the gateway's own model-call handler): that very
    // model is asked once, with no agent prompt or tools.
    const model = await app.inject(chat({ ...hello, model: "sim/spare" }));
    expect(model.statusCode).toBe(200);
    expect(model.json().model).toBe("sim/spare");
    expect(sim.requests().length).toBe(calls + 1);
    expect(sim.requests().at(-1)?.body).toMatchObject({ model: "spare" });
    expect(sim.requests().at(-1)?.body).not.toHaveProperty("tools");
  });

  it("hands a PROVIDER/NAME chat to the model-call handler with its target, and maps unknown ids with default_model", async () => {
    const seen: ModelCallRequest[] = [];
    const { app } = await setup({
      gateway: { default_model: "sim/main" },
      modelCall: async (request) => {
        seen.push(request);
        request.res.writeHead(200, { "content-type": "application/json" });
        request.res.end(JSON.stringify({ answered: request.target }));
      },
    });
    const called = await app.inject(
      chat({ ...hello, model: "sim/spare", tools: [] }, { ...json, "x-session-id": "s_1" }),
    );
    expect(called.statusCode).toBe(200);
    expect(called.json()).toEqual({ answered: { provider: "sim", model: "spare" } });
    expect(seen[0]?.body).toMatchObject({ model: "sim/spare", tools: [] });
    expect(seen[0]?.sessionId).toBe("s_1");
    const mapped = await app.inject(chat({ ...hello, model: "gpt-4o" }));
    expect(mapped.json()).toEqual({ answered: { provider: "sim", model: "main" } });
    // tenax is still the agent.
    expect((await app.inject(chat({ ...hello, model: "tenax" }))).json().object).toBe("chat.completion");
  });

  it("refuses a default_model that names no model of the gateway, at build", async () => {
    await expect(setup({ gateway: { default_model: "nope/x" } })).rejects.toThrow(
      /gateway.default_model .*tenax, sim\/main/,
    );
  });
});
