// The simulator's app called in-process (Fastify inject, no port): the same answers and records as
// over a socket, with the clock injected so that times are exact.
import { describe, expect, it } from "vitest";
import { buildSimulatorApp } from "./app.js";
import { SimulatorState } from "./state.js";

function setup() {
  let now = 1_700_000_000_000;
  const state = new SimulatorState();
  const app = buildSimulatorApp({
    state,
    models: { echo: { context_window: 1000 } },
    clock: { now: () => now },
  });
  return { app, state, tick: (ms: number) => (now += ms) };
}

const chat = (extra: Record<string, unknown> = {}) => ({
  method: "POST" as const,
  url: "/v1/chat/completions",
  headers: { "content-type": "application/json", authorization: "Bearer k1" },
  payload: { model: "echo", messages: [{ role: "user", content: "hello there" }], ...extra },
});

describe("the simulator app in-process", () => {
  it("answers a completion and a stream, and records each with the injected clock", async () => {
    const { app, state } = setup();
    const whole = await app.inject(chat());
    expect(whole.statusCode).toBe(200);
    expect(whole.headers["x-request-id"]).toBe("req_sim_1");
    expect(whole.json()).toMatchObject({
      id: "chatcmpl-sim-1",
      created: 1_700_000_000,
      choices: [{ message: { content: "echo: hello there" }, finish_reason: "stop" }],
    });

    state.script([{ type: "reply", text: "abcdef", chunk_size: 4 }]);
    const streamed = await app.inject(chat({ stream: true }));
    expect(streamed.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    const events = streamed.body.split("\n\n").filter((e) => e !== "");
    expect(events.at(-1)).toBe("data: [DONE]");
    const text = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice("data: ".length)) as { choices: { delta: { content?: string } }[] })
      .map((c) => c.choices[0]?.delta.content ?? "")
      .join("");
    expect(text).toBe("abcdef");

    await state.idle();
    expect(state.requests()).toMatchObject([
      {
        seq: 1,
        path: "/v1/chat/completions",
        headers: { authorization: "Bearer k1" },
        body: { model: "echo" },
        received_at: 1_700_000_000_000,
        step: "default",
        status: 200,
        ended: "completed",
      },
      { seq: 2, step: "reply", status: 200, ended: "completed" },
    ]);
  });

  it("answers a scripted error, a bad body, an unknown model and an unknown route as a provider does", async () => {
    const { app, state } = setup();
    state.script([{ type: "error", status: 429, headers: { "Retry-After": "2" } }]);
    const limited = await app.inject(chat());
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBe("2");
    expect(limited.json()).toEqual({
      error: { message: "simulated error 429", type: "rate_limit_error", param: null, code: null },
    });

    // A body of any media type is read, as a provider reads it.
    const plain = await app.inject({
      method: "POST",
      url: "/v1/chat/completions",
      headers: { "content-type": "text/plain" },
      payload: "{oops",
    });
    expect(plain.statusCode).toBe(400);
    expect(plain.json()).toEqual({
      error: {
        message: "the request body is not valid JSON",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });

    const noMessages = await app.inject({ ...chat(), payload: { model: "echo" } });
    expect(noMessages.statusCode).toBe(400);
    expect(noMessages.json()).toMatchObject({ error: { param: "messages", code: "invalid_field" } });

    const unknownModel = await app.inject(chat({ model: "nope" }));
    expect(unknownModel.statusCode).toBe(404);
    expect(unknownModel.json()).toMatchObject({ error: { code: "model_not_found", param: "model" } });

    const unknownRoute = await app.inject({
      method: "POST",
      url: "/v1/embeddings",
      payload: '{"input":"x"}',
    });
    expect(unknownRoute.statusCode).toBe(404);
    expect(unknownRoute.json()).toMatchObject({ error: { code: "unknown_url" } });

    await state.idle();
    const records = state.requests();
    expect(records.map((r) => r.status)).toEqual([429, 400, 400, 404, 404]);
    // Unknown routes are recorded with their body too.
    expect(records[4]).toMatchObject({ path: "/v1/embeddings", body: { input: "x" } });
  });

  it("lists its models, model ids with slashes included", async () => {
    const state = new SimulatorState();
    const app = buildSimulatorApp({ state, models: { "org/model-a": { context_window: 10 } } });
    const list = await app.inject({ method: "GET", url: "/v1/models" });
    expect(list.json()).toMatchObject({ object: "list", data: [{ id: "org/model-a", object: "model" }] });
    const one = await app.inject({ method: "GET", url: "/v1/models/org/model-a" });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ id: "org/model-a" });
  });
});
