// The model-gateway mode (`model: "PROVIDER/NAME"`) through the official openai client over a real
// socket: the client's own tools, format, images and parameters reach the provider as sent (each
// test reads what the simulator or the Anthropic-wire peer received), tool calls stream as pieces,
// the resilience core retries, rotates and falls back, a failure raises in the client, and every
// call is stored as a session.
import { APIError } from "openai";
import type { ChatCompletionChunk, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { startModelGateway } from "./helpers/model-gateway.js";
import { err } from "./helpers/router.js";

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

const PNG =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe("the model-gateway mode over the openai client", () => {
  it("does a tools round trip with the client's parameters, forwarding unknown fields, stored as one session", async () => {
    const gw = await startModelGateway();
    gw.main.script([
      { type: "tool_calls", calls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Paris" } }] },
      { type: "reply", text: "It is sunny in Paris." },
    ]);
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Weather in Paris?" },
    ];
    const first = await gw.client.chat.completions
      .create({
        model: "main/echo",
        messages,
        tools: [weatherTool],
        tool_choice: "auto",
        parallel_tool_calls: false,
        temperature: 0.2,
        top_p: 0.9,
        seed: 7,
        user: "user-1",
        stop: ["END"],
        max_tokens: 50,
        frequency_penalty: 0.5,
        // A field Tenax does not know: sent on as it came.
        ...({ vendor_option: { keep: true } } as object),
      })
      .withResponse();
    const choice = first.data.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.content).toBeNull();
    expect(choice?.message.tool_calls).toEqual([
      { id: "call_w1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ]);
    const sessionId = first.response.headers.get("x-session-id");
    expect(sessionId).toMatch(/^s_/);

    const sent = gw.bodies(gw.main)[0];
    expect(sent).toMatchObject({
      model: "echo",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Weather in Paris?" },
      ],
      tools: [weatherTool],
      tool_choice: "auto",
      parallel_tool_calls: false,
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      user: "user-1",
      stop: ["END"],
      max_tokens: 50,
      frequency_penalty: 0.5,
      vendor_option: { keep: true },
      stream: true,
    });

    const call = choice?.message.tool_calls?.[0];
    const second = await gw.client.chat.completions
      .create(
        {
          model: "main/echo",
          messages: [
            ...messages,
            { role: "assistant", content: null, tool_calls: call ? [call] : [] },
            { role: "tool", tool_call_id: "call_w1", content: '{"sky":"clear"}' },
          ],
          tools: [weatherTool],
        },
        { headers: { "x-session-id": sessionId ?? "" } },
      )
      .withResponse();
    expect(second.data.choices[0]?.message.content).toBe("It is sunny in Paris.");
    expect(second.data.choices[0]?.finish_reason).toBe("stop");
    expect(second.response.headers.get("x-session-id")).toBe(sessionId);
    expect(gw.bodies(gw.main)[1]?.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_w1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: "tool", content: '{"sky":"clear"}', tool_call_id: "call_w1" },
    ]);

    const session = await gw.store.getSession(sessionId ?? "");
    expect(session).toMatchObject({ source: "gateway-model", model: "main/echo" });
    const stored = (await gw.store.getMessages(sessionId ?? "")).map((m) => [
      m.role,
      m.content,
      m.tool_call_id ?? null,
    ]);
    expect(stored).toEqual([
      ["system", "You are terse.", null],
      ["user", "Weather in Paris?", null],
      ["assistant", null, null],
      ["tool", '{"sky":"clear"}', "call_w1"],
      ["assistant", "It is sunny in Paris.", null],
    ]);
  });

  it("passes json_schema as sent and answers with the model's JSON", async () => {
    const gw = await startModelGateway();
    gw.main.script([{ type: "reply", text: '{"name":"Ada","age":36}' }]);
    const format = {
      type: "json_schema" as const,
      json_schema: {
        name: "person",
        strict: true,
        schema: {
          type: "object",
          properties: { name: { type: "string" }, age: { type: "integer" } },
          required: ["name", "age"],
          additionalProperties: false,
        },
      },
    };
    const answer = await gw.client.chat.completions.create({
      model: "main/echo",
      messages: [{ role: "user", content: "Who wrote the first program?" }],
      response_format: format,
      max_completion_tokens: 64,
      logprobs: true,
      top_logprobs: 2,
    });
    expect(JSON.parse(answer.choices[0]?.message.content ?? "")).toEqual({ name: "Ada", age: 36 });
    expect(answer.model).toBe("main/echo");
    expect(gw.bodies(gw.main)[0]).toMatchObject({
      response_format: format,
      max_tokens: 64,
      logprobs: true,
      top_logprobs: 2,
    });
  });

  it("answers with the provider's log probabilities, whole and streamed", async () => {
    const gw = await startModelGateway();
    gw.main.script([
      { type: "reply", text: "abcdefgh", chunk_size: 4 },
      { type: "reply", text: "abcdefgh", chunk_size: 4 },
    ]);
    const request = {
      model: "main/echo",
      messages: [{ role: "user" as const, content: "letters" }],
      logprobs: true,
      top_logprobs: 1,
    };
    const whole = await gw.client.chat.completions.create(request);
    // The provider is always streamed to: its pieces' log probabilities are put together.
    expect(whole.choices[0]?.logprobs?.content?.map((t) => t.token)).toEqual(["abcd", "efgh"]);
    const chunks = await collect(await gw.client.chat.completions.create({ ...request, stream: true }));
    const tokens = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []).map((t) => t.token);
    expect(tokens).toEqual(["abcd", "efgh"]);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("abcdefgh");
  });

  it("sends image parts as they came and stores them with the session", async () => {
    const gw = await startModelGateway();
    gw.main.script([{ type: "reply", text: "A single pixel." }]);
    const content = [
      { type: "text" as const, text: "What is in this image?" },
      { type: "image_url" as const, image_url: { url: PNG, detail: "low" as const } },
    ];
    const answer = await gw.client.chat.completions
      .create({ model: "main/echo", messages: [{ role: "user", content }] })
      .withResponse();
    expect(answer.data.choices[0]?.message.content).toBe("A single pixel.");
    expect(gw.bodies(gw.main)[0]?.messages).toEqual([{ role: "user", content }]);
    const stored = await gw.store.getMessages(answer.response.headers.get("x-session-id") ?? "");
    // Stored as parts, in the shape the client sent them.
    expect(JSON.parse(String(stored[0]?.content))).toEqual(content);
  });

  it("streams tool calls as OpenAI tool-call deltas, with usage when asked", async () => {
    const gw = await startModelGateway();
    gw.main.script([
      {
        type: "tool_calls",
        chunk_size: 4,
        calls: [
          { id: "call_a", name: "get_weather", arguments: { city: "Paris" } },
          { id: "call_b", name: "get_weather", arguments: { city: "Oslo" } },
        ],
      },
    ]);
    const chunks = await collect(
      await gw.client.chat.completions.create({
        model: "main/echo",
        messages: [{ role: "user", content: "Paris and Oslo?" }],
        tools: [weatherTool],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    // Each call opens with its id and name, then its arguments come in pieces of four characters.
    expect(deltas.filter((d) => d.id !== undefined)).toEqual([
      { index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } },
      { index: 1, id: "call_b", type: "function", function: { name: "get_weather", arguments: "" } },
    ]);
    const args = (i: number) =>
      deltas
        .filter((d) => d.index === i)
        .map((d) => d.function?.arguments ?? "")
        .join("");
    expect(args(0)).toBe('{"city":"Paris"}');
    expect(args(1)).toBe('{"city":"Oslo"}');
    expect(deltas.filter((d) => d.index === 0 && d.id === undefined).length).toBeGreaterThan(2);
    expect(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)).toEqual(["tool_calls"]);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(0);
    expect(gw.bodies(gw.main)[0]).toMatchObject({ stream: true, tools: [weatherTool] });
  });

  it("restarts a stream dropped mid-reply without sending the client what it already has", async () => {
    const gw = await startModelGateway();
    // The drop sends the start of the default reply ("echo: hello there"), then cuts the socket.
    gw.main.script([{ type: "drop", after_chunks: 2 }]);
    const chunks = await collect(
      await gw.client.chat.completions.create({
        model: "main/echo",
        messages: [{ role: "user", content: "hello there" }],
        stream: true,
      }),
    );
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("echo: hello there");
    expect(gw.bodies(gw.main)).toHaveLength(2);
    expect(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)).toEqual(["stop"]);
  });

  it("retries a 429 on the next key and a 500 after a backoff, then answers", async () => {
    const gw = await startModelGateway();
    gw.main.script([err(429, { "retry-after": "1" }), err(500), { type: "reply", text: "recovered" }]);
    const answer = await gw.client.chat.completions.create({
      model: "main/echo",
      messages: [{ role: "user", content: "hello" }],
      tools: [weatherTool],
    });
    expect(answer.choices[0]?.message.content).toBe("recovered");
    const requests = gw.main.requests().filter((r) => r.path === "/v1/chat/completions");
    expect(requests.map((r) => r.status)).toEqual([429, 500, 200]);
    // The 429 cooled the first key: the next request went out on the second.
    expect(requests.map((r) => String(r.headers.authorization))).toEqual([
      "Bearer sk-main-1",
      "Bearer sk-main-2",
      "Bearer sk-main-2",
    ]);
    expect(gw.deps.delays.length).toBeGreaterThan(0);
    // Every attempt sent the client's request, not a reduced one.
    for (const body of gw.bodies(gw.main)) expect(body.tools).toEqual([weatherTool]);
    expect((answer as unknown as { tenax: { attempts: number } }).tenax.attempts).toBe(2);
  });

  it("holds calls to the provider's max_concurrency: the second waits for the first", async () => {
    const gw = await startModelGateway({ mainConcurrency: 1 });
    gw.main.script([
      { type: "reply", text: "first answer", chunk_size: 2, chunk_delay_ms: 20 },
      { type: "reply", text: "second answer", chunk_size: 2, chunk_delay_ms: 20 },
    ]);
    const ask = (content: string) =>
      gw.client.chat.completions.create({ model: "main/echo", messages: [{ role: "user", content }] });
    const answers = await Promise.all([ask("one"), ask("two")]);
    expect(answers.map((a) => a.choices[0]?.message.content).sort()).toEqual([
      "first answer",
      "second answer",
    ]);
    const [a, b] = gw.main.requests().filter((r) => r.path === "/v1/chat/completions");
    // The second request reached the provider only once the first had ended.
    expect(b?.received_at).toBeGreaterThanOrEqual(a?.ended_at ?? Number.POSITIVE_INFINITY);
  });

  it("falls back once to the chain's next model when the primary gives up", async () => {
    const gw = await startModelGateway();
    gw.main.script([err(500), err(500), err(500)]);
    gw.backup.script([{ type: "reply", text: "from backup" }]);
    const answer = await gw.client.chat.completions.create({
      model: "main/echo",
      messages: [{ role: "user", content: "hello" }],
      temperature: 0.1,
    });
    expect(answer.choices[0]?.message.content).toBe("from backup");
    expect(answer.model).toBe("backup/echo");
    expect((answer as unknown as { tenax: { fell_back: boolean } }).tenax.fell_back).toBe(true);
    expect(gw.bodies(gw.main)).toHaveLength(3);
    expect(gw.bodies(gw.backup)).toEqual([
      expect.objectContaining({ messages: [{ role: "user", content: "hello" }], temperature: 0.1 }),
    ]);
  });

  it("raises in the client when the call fails, streamed or not, and never answers an empty success", async () => {
    // Both calls must meet the retry and fallback layers' failure: the breaker would rightly refuse
    // the second with circuit_open after five failures (test/gateway-breaker.test.ts), so it is off.
    const gw = await startModelGateway({ breaker: false });
    const down = [err(500), err(500), err(500)];
    gw.main.script([...down, ...down]);
    gw.backup.script([...down, ...down]);
    const request = { model: "main/echo", messages: [{ role: "user" as const, content: "hello" }] };
    const plain = await gw.client.chat.completions.create(request).catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(APIError);
    expect((plain as APIError).status).toBe(502);
    expect((plain as APIError).code).toBe("server_error");
    expect((plain as APIError).message).toMatch(/fallback layer gave up/);

    const streamed = await collect(
      await gw.client.chat.completions.create({ ...request, stream: true }),
    ).catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(APIError);
    expect((streamed as APIError).message).toMatch(/fallback layer gave up/);
    expect(gw.bodies(gw.main)).toHaveLength(6);
    expect(gw.bodies(gw.backup)).toHaveLength(6);
  });

  it("answers a provider's refusal of the client's request as the client's 400, with the provider's words", async () => {
    const gw = await startModelGateway();
    gw.main.script([
      err(
        400,
        {},
        {
          error: {
            message: "tools[0].function.parameters is not a valid schema",
            type: "invalid_request_error",
            code: null,
            param: null,
          },
        },
      ),
    ]);
    const error = await gw.client.chat.completions
      .create({ model: "main/echo", messages: [{ role: "user", content: "hi" }], tools: [weatherTool] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(400);
    expect((error as APIError).message).toMatch(/not a valid schema/);
    // Not retried, not fallen back: another model would refuse it too.
    expect(gw.bodies(gw.main)).toHaveLength(1);
    expect(gw.bodies(gw.backup)).toHaveLength(0);
  });

  it("refuses a bad body with a 400 that names the field's path", async () => {
    const gw = await startModelGateway();
    const error = await gw.client.chat.completions
      .create({
        model: "main/echo",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "x" },
              { type: "image_url", image_url: { url: "ftp://x" } },
            ],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(400);
    expect((error as APIError).message).toMatch(
      /400 messages\[0\]\.content\[1\]\.image_url\.url: expected an http/,
    );
    expect(gw.bodies(gw.main)).toHaveLength(0);
  });
});
