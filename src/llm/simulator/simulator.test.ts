import OpenAI, { APIError, APIUserAbortError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { rawRequest } from "../../../test/helpers/raw-http.js";
import { type Simulator, startSimulator } from "./server.js";

let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(models?: Record<string, { context_window: number }>): Promise<Simulator> {
  sim = await startSimulator({ port: 0, host: "127.0.0.1", ...(models ? { models } : {}) });
  return sim;
}

function client(s: Simulator, apiKey = "k1"): OpenAI {
  return new OpenAI({ baseURL: s.url, apiKey, maxRetries: 0 });
}

const hello = [{ role: "user" as const, content: "hello there" }];

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe("simulator over the official openai client", () => {
  it("answers a request Node cannot parse in the OpenAI error shape, not a bare 400", async () => {
    const s = await start();
    const answer = await rawRequest(s.url, "FOO", "/v1/chat/completions");
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({
      error: { code: "invalid_http", type: "invalid_request_error" },
    });
  });

  it("answers a completion with the default echo reply and usage", async () => {
    const s = await start();
    const completion = await client(s).chat.completions.create({ model: "echo", messages: hello });
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]?.message.content).toBe("echo: hello there");
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    // "hello there" is 11 characters, "echo: hello there" 17.
    expect(completion.usage).toEqual({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 });
  });

  it("streams a scripted reply in chunks with usage in the last chunk", async () => {
    const s = await start();
    s.script([{ type: "reply", text: "abcdefghij", chunk_size: 3, finish_reason: "length" }]);
    const stream = await client(s).chat.completions.create({
      model: "echo",
      messages: hello,
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let finish: string | null | undefined;
    let usage: unknown;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("chat.completion.chunk");
      const choice = chunk.choices[0];
      if (choice?.delta.content) pieces.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces).toEqual(["abc", "def", "ghi", "j"]);
    expect(finish).toBe("length");
    expect(usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    expect(s.requests()[0]?.ended).toBe("completed");
  });

  it("paces a slow stream through the injected sleep, once between each pair of chunks", async () => {
    const waits: number[] = [];
    sim = await startSimulator({
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    sim.script([{ type: "reply", text: "abcd", chunk_size: 2, chunk_delay_ms: 250 }]);
    const stream = await client(sim).chat.completions.create({
      model: "echo",
      messages: hello,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("abcd");
    // Four chunks (role, "ab", "cd", finish) have three gaps.
    expect(waits).toEqual([250, 250, 250]);
  });

  it("streams tool calls as tool_call deltas the SDK reassembles", async () => {
    const s = await start();
    s.script([
      {
        type: "tool_calls",
        calls: [
          { name: "read_file", arguments: { path: "/tmp/a.txt" } },
          { id: "call_x", name: "shell", arguments: '{"cmd":"ls"}' },
        ],
        chunk_size: 5,
      },
    ]);
    const stream = client(s).chat.completions.stream({ model: "echo", messages: hello });
    const final = await stream.finalChatCompletion();
    const choice = final.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    const calls = (choice?.message.tool_calls ?? []).map((c) =>
      c.type === "function" ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : [],
    );
    expect(calls).toEqual([
      ["call_sim1_0", "read_file", { path: "/tmp/a.txt" }],
      ["call_x", "shell", { cmd: "ls" }],
    ]);
  });

  it("returns tool calls without a stream", async () => {
    const s = await start();
    s.script([{ type: "tool_calls", calls: [{ name: "now", arguments: {} }] }]);
    const completion = await client(s).chat.completions.create({ model: "echo", messages: hello });
    expect(completion.choices[0]?.finish_reason).toBe("tool_calls");
    expect(completion.choices[0]?.message.content).toBeNull();
    expect(completion.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: "function",
      function: { name: "now", arguments: "{}" },
    });
  });

  it("delivers a scripted 429 with its retry-after header and body, and records the key used", async () => {
    const s = await start();
    s.script([
      {
        type: "error",
        status: 429,
        headers: { "Retry-After": "7", "x-ratelimit-reset-requests": "6.5s" },
        body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
      },
    ]);
    const error = await client(s, "sk-first")
      .chat.completions.create({ model: "echo", messages: hello })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    const apiError = error as APIError;
    expect(apiError.status).toBe(429);
    expect(apiError.headers?.get("retry-after")).toBe("7");
    expect(apiError.headers?.get("x-ratelimit-reset-requests")).toBe("6.5s");
    expect(apiError.code).toBe("rate_limit_exceeded");
    const [record] = s.requests();
    expect(record?.headers.authorization).toBe("Bearer sk-first");
    expect(record).toMatchObject({
      method: "POST",
      path: "/v1/chat/completions",
      step: "error",
      status: 429,
    });
    expect(record?.body).toMatchObject({ model: "echo", messages: hello });
  });

  it("sends a raw text error body as it is", async () => {
    const s = await start();
    s.script([{ type: "error", status: 502, text: "<html>Bad Gateway</html>" }]);
    const response = await fetch(`${s.url}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "echo", messages: hello }),
    });
    expect(response.status).toBe(502);
    expect(response.headers.get("content-type")).toContain("text/plain");
    expect(await response.text()).toBe("<html>Bad Gateway</html>");
  });

  it("hangs before headers until the client aborts, and records client_closed", async () => {
    const s = await start();
    s.script([{ type: "hang", phase: "before_headers" }]);
    const controller = new AbortController();
    const pending = client(s)
      .chat.completions.create({ model: "echo", messages: hello }, { signal: controller.signal })
      .catch((e: unknown) => e);
    await waitFor(() => s.requests().length === 1);
    expect(s.requests()[0]?.ended).toBe("open");
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(APIUserAbortError);
    await s.idle();
    expect(s.requests()[0]).toMatchObject({ ended: "client_closed", status: null, step: "hang" });
  });

  it("hangs mid-stream after the given chunks until the client goes away", async () => {
    const s = await start();
    s.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const controller = new AbortController();
    const stream = await client(s).chat.completions.create(
      { model: "echo", messages: hello, stream: true },
      { signal: controller.signal },
    );
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
    })().catch((e: unknown) => e);
    await waitFor(() => seen.length === 2);
    controller.abort();
    // The SDK ends an aborted stream's iteration quietly or with an abort error; either way it ends.
    await reading;
    expect(seen).toEqual(["", "echo: he"]);
    await s.idle();
    expect(s.requests()[0]?.ended).toBe("client_closed");
  });

  it("ends a hanging request when the simulator closes", async () => {
    const s = await start();
    s.script([{ type: "hang", phase: "before_headers" }]);
    const pending = client(s)
      .chat.completions.create({ model: "echo", messages: hello })
      .catch((e: unknown) => e);
    await waitFor(() => s.requests().length === 1);
    const records = s.requests;
    await s.close();
    sim = undefined;
    expect(await pending).toBeInstanceOf(APIError);
    expect(records()[0]?.ended).toBe("server_closed");
  });

  it("drops the connection mid-stream, which the client's stream surfaces as an error", async () => {
    const s = await start();
    s.script([{ type: "drop", after_chunks: 2 }]);
    const stream = await client(s).chat.completions.create({ model: "echo", messages: hello, stream: true });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(seen).toEqual(["", "echo: he"]);
    await s.idle();
    expect(s.requests()[0]?.ended).toBe("dropped");
  });

  it("drops a stream that was saying the scripted text, or making the scripted tool calls", async () => {
    const s = await start();
    s.script([
      { type: "drop", after_chunks: 3, text: "alpha beta gamma delta" },
      { type: "drop", after_chunks: 3, calls: [{ name: "get_weather", arguments: { city: "Paris" } }] },
    ]);
    const read = async () => {
      const stream = await client(s).chat.completions.create({
        model: "echo",
        messages: hello,
        stream: true,
      });
      const seen: unknown[] = [];
      const error = await (async () => {
        for await (const chunk of stream) seen.push(chunk.choices[0]?.delta);
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      return seen;
    };
    expect(await read()).toEqual([
      { role: "assistant", content: "", refusal: null },
      { content: "alpha be" },
      { content: "ta gamma" },
    ]);
    expect(await read()).toEqual([
      { role: "assistant", content: "", refusal: null },
      {
        tool_calls: [
          {
            index: 0,
            id: "call_sim2_0",
            type: "function",
            function: { name: "get_weather", arguments: "" },
          },
        ],
      },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
    ]);
    await s.idle();
    expect(s.requests().map((r) => r.ended)).toEqual(["dropped", "dropped"]);
  });

  it("drops a non-streamed answer halfway through its body", async () => {
    const s = await start();
    s.script([{ type: "drop" }]);
    const error = await client(s)
      .chat.completions.create({ model: "echo", messages: hello })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(s.requests()[0]?.ended).toBe("dropped");
  });

  it("sends malformed JSON with a 200, and a non-JSON stream chunk", async () => {
    const s = await start();
    s.script([{ type: "malformed" }, { type: "malformed", after_chunks: 1, raw: "not json at all" }]);
    const openai = client(s);
    const bodyError = await openai.chat.completions
      .create({ model: "echo", messages: hello })
      .catch((e: unknown) => e);
    expect(bodyError).toBeInstanceOf(Error);
    expect(bodyError).not.toBeInstanceOf(APIError);

    const stream = await openai.chat.completions.create({ model: "echo", messages: hello, stream: true });
    let count = 0;
    const streamError = await (async () => {
      for await (const _chunk of stream) count++;
    })().catch((e: unknown) => e);
    expect(count).toBe(1);
    expect(String(streamError)).toMatch(/JSON/);
    expect(s.requests().map((r) => r.status)).toEqual([200, 200]);
  });

  it("refuses a request over the context window with the window and the requested size", async () => {
    const s = await start({ small: { context_window: 100 } });
    s.script([{ type: "reply", text: "kept for the next request" }]);
    const openai = client(s);
    const error = await openai.chat.completions
      .create({ model: "small", messages: [{ role: "user", content: "x".repeat(360) }], max_tokens: 20 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    const apiError = error as APIError;
    expect(apiError.status).toBe(400);
    expect(apiError.code).toBe("context_length_exceeded");
    expect(apiError.message).toContain("maximum context length is 100 tokens");
    expect(apiError.message).toContain("needs 110 tokens (90 in the messages, 20 for the completion)");
    // The refused request took no step, so a request that fits gets the scripted reply.
    const fits = await openai.chat.completions.create({
      model: "small",
      messages: [{ role: "user", content: "x".repeat(360) }],
    });
    expect(fits.choices[0]?.message.content).toBe("kept for the next request");
  });

  it("lists its models and refuses an unknown one", async () => {
    const s = await start({ a: { context_window: 10 }, b: { context_window: 20 } });
    const openai = client(s);
    const ids: string[] = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    expect(ids).toEqual(["a", "b"]);
    const error = await openai.chat.completions
      .create({ model: "nope", messages: hello })
      .catch((e: unknown) => e);
    expect((error as APIError).status).toBe(404);
    expect((error as APIError).code).toBe("model_not_found");
  });

  it("answers a model id that is not valid percent-encoding with a 400 naming it, not a 500", async () => {
    const s = await start();
    const answer = await fetch(`${s.url}/models/%E0%A4%A`);
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({
      error: {
        message: 'the model id "%E0%A4%A" is not valid percent-encoding',
        type: "invalid_request_error",
        param: null,
        code: "invalid_url",
      },
    });
  });

  it("applies steps in order, one per request, then falls back to the default reply", async () => {
    const s = await start();
    s.script([
      { type: "reply", text: "one" },
      { type: "error", status: 503 },
    ]);
    expect(s.queued()).toBe(2);
    const openai = client(s);
    const ask = () =>
      openai.chat.completions.create({ model: "echo", messages: hello }).then(
        (c) => c.choices[0]?.message.content,
        (e: unknown) => (e as APIError).status,
      );
    expect([await ask(), await ask(), await ask()]).toEqual(["one", 503, "echo: hello there"]);
    expect(s.requests().map((r) => r.step)).toEqual(["reply", "error", "default"]);
    s.reset();
    expect(s.requests()).toEqual([]);
    expect(s.queued()).toBe(0);
  });
});
