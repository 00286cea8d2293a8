// Third-party clients against the model-gateway mode (`model: "main/echo"`) of the real gateway app
// over a real socket: the Vercel AI SDK on both of its OpenAI APIs (the default provider speaks the
// Responses API, `openai.chat` chat completions) and LangChain's ChatOpenAI. Each test reads what
// the provider (a simulator) received: the client's tools with their parameters, tool_choice,
// response_format with its schema, and the tool's result on the follow-up call.
import { createOpenAI } from "@ai-sdk/openai";
import { tool as lcTool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ModelGateway, startModelGateway } from "./helpers/model-gateway.js";

const MODEL = "main/echo";

function aiSdk(gw: ModelGateway) {
  return createOpenAI({ baseURL: gw.url, apiKey: gw.key });
}

const weather = () =>
  tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, sky: "clear" }),
  });

/** The JSON Schema a provider gets for `{ city: string }`. */
const cityParameters = expect.objectContaining({
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
});

const person = z.object({ name: z.string(), age: z.number().int() });

/** The JSON Schema a provider gets for `person`, as each client writes it (with its own extras). */
const personSchema = expect.objectContaining({
  type: "object",
  properties: {
    name: expect.objectContaining({ type: "string" }),
    age: expect.objectContaining({ type: "integer" }),
  },
  required: ["name", "age"],
  additionalProperties: false,
});

describe("the Vercel AI SDK against the model-gateway mode", () => {
  for (const api of ["responses", "chat"] as const) {
    const model = (gw: ModelGateway) => (api === "chat" ? aiSdk(gw).chat(MODEL) : aiSdk(gw)(MODEL));

    it(`generates text (${api} API)`, async () => {
      const gw = await startModelGateway();
      gw.main.script([{ type: "reply", text: "Hello from the provider." }]);
      const result = await generateText({
        model: model(gw),
        system: "Be brief.",
        prompt: "Say hello",
        maxRetries: 0,
        temperature: 0.3,
        maxOutputTokens: 40,
      });
      expect(result.text).toBe("Hello from the provider.");
      expect(result.finishReason).toBe("stop");
      expect(result.usage.outputTokens).toBeGreaterThan(0);
      expect(gw.bodies(gw.main)).toEqual([
        expect.objectContaining({
          model: "echo",
          messages: [
            { role: "system", content: "Be brief." },
            { role: "user", content: "Say hello" },
          ],
          temperature: 0.3,
          max_tokens: 40,
        }),
      ]);
    });

    it(`streams text (${api} API)`, async () => {
      const gw = await startModelGateway();
      gw.main.script([{ type: "reply", text: "streamed in small pieces", chunk_size: 3 }]);
      let failure: unknown = null;
      const result = streamText({
        model: model(gw),
        prompt: "Stream something",
        maxRetries: 0,
        onError: ({ error }) => {
          failure ??= error;
        },
      });
      const deltas: string[] = [];
      for await (const delta of result.textStream) deltas.push(delta);
      expect(failure).toBeNull();
      expect(deltas.join("")).toBe("streamed in small pieces");
      expect(deltas.length).toBeGreaterThan(3);
      expect(await result.finishReason).toBe("stop");
      expect(gw.bodies(gw.main)).toEqual([
        expect.objectContaining({ messages: [{ role: "user", content: "Stream something" }] }),
      ]);
    });

    for (const streamed of [false, true])
      it(`runs a tool round trip: the SDK runs the tool and sends its result back (${api} API, ${streamed ? "streamText" : "generateText"})`, async () => {
        const gw = await startModelGateway();
        gw.main.script([
          {
            type: "tool_calls",
            chunk_size: 4,
            calls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Paris" } }],
          },
          { type: "reply", text: "It is clear in Paris.", chunk_size: 4 },
        ]);
        const call = {
          prompt: "Weather in Paris?",
          tools: { get_weather: weather() },
          stopWhen: stepCountIs(3),
          maxRetries: 0,
        };
        let failure: unknown = null;
        const result = streamed
          ? streamText({
              model: model(gw),
              ...call,
              toolChoice: { type: "tool", toolName: "get_weather" },
              onError: ({ error }) => {
                failure ??= error;
              },
            })
          : await generateText({ model: model(gw), ...call, toolChoice: "auto" });
        expect(await result.text).toBe("It is clear in Paris.");
        expect(failure).toBeNull();
        const steps = await result.steps;
        expect(steps.map((s) => s.finishReason)).toEqual(["tool-calls", "stop"]);
        expect(steps[0]?.toolResults.map((r) => r.output)).toEqual([{ city: "Paris", sky: "clear" }]);
        const [first, second] = gw.bodies(gw.main);
        expect(gw.bodies(gw.main)).toHaveLength(2);
        expect(first).toMatchObject({
          tools: [
            {
              type: "function",
              function: expect.objectContaining({
                name: "get_weather",
                description: "The weather in a city",
                parameters: cityParameters,
              }),
            },
          ],
          tool_choice: streamed ? { type: "function", function: { name: "get_weather" } } : "auto",
        });
        expect(second?.messages).toEqual([
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
          { role: "tool", tool_call_id: "call_w1", content: '{"city":"Paris","sky":"clear"}' },
        ]);
      });

    it(`generates an object from a zod schema through json_schema (${api} API)`, async () => {
      const gw = await startModelGateway();
      gw.main.script([{ type: "reply", text: '{"name":"Ada","age":36}' }]);
      const result = await generateObject({
        model: model(gw),
        schema: person,
        schemaName: "person",
        prompt: "Who wrote the first program?",
        maxRetries: 0,
      });
      expect(result.object).toEqual({ name: "Ada", age: 36 });
      expect(gw.bodies(gw.main)[0]?.response_format).toEqual({
        type: "json_schema",
        json_schema: expect.objectContaining({
          name: "person",
          schema: personSchema,
        }),
      });
    });
  }

  it("goes on from what a stored response said, which the Responses API SDK sends as item_reference", async () => {
    const gw = await startModelGateway();
    // Every body the SDK sent the gateway.
    const sent: Record<string, unknown>[] = [];
    const model = createOpenAI({
      baseURL: gw.url,
      apiKey: gw.key,
      fetch: async (url, init) => {
        if (typeof init?.body === "string") sent.push(JSON.parse(init.body) as Record<string, unknown>);
        return fetch(url, init);
      },
    })(MODEL);
    gw.main.script([
      {
        type: "tool_calls",
        text: "Let me check.",
        calls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Paris" } }],
      },
      { type: "reply", text: "It is clear." },
      { type: "reply", text: "Still clear." },
    ]);
    // The model speaks before it calls the tool: the SDK's next step refers to that text by id.
    const first = await generateText({
      model,
      prompt: "Weather in Paris?",
      tools: { get_weather: weather() },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(first.text).toBe("It is clear.");
    const referenced = (body: Record<string, unknown> | undefined) =>
      ((body?.input ?? []) as { type?: string }[]).filter((i) => i.type === "item_reference");
    expect(referenced(sent[1])).toHaveLength(1);
    const call = {
      id: "call_w1",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    };
    const told = [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: "Let me check.", tool_calls: [call] },
      { role: "tool", tool_call_id: "call_w1", content: '{"city":"Paris","sky":"clear"}' },
    ];
    expect(gw.bodies(gw.main)[1]?.messages).toEqual(told);

    // A conversation carried on from the SDK's own response messages: both texts by reference.
    const next = await generateText({
      model,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        ...first.response.messages,
        { role: "user", content: "And now?" },
      ],
      maxRetries: 0,
    });
    expect(next.text).toBe("Still clear.");
    expect(referenced(sent[2])).toHaveLength(2);
    expect(gw.bodies(gw.main)[2]?.messages).toEqual([
      ...told,
      { role: "assistant", content: "It is clear." },
      { role: "user", content: "And now?" },
    ]);
  });

  it("answers an item_reference no stored response holds with a 404 naming it", async () => {
    const gw = await startModelGateway();
    const answer = await fetch(`${gw.url}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        input: [
          { role: "user", content: "hi" },
          { type: "item_reference", id: "msg_nowhere" },
        ],
      }),
    });
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { error: unknown }).error).toMatchObject({
      code: "item_not_found",
      param: "input.1.id",
      message: expect.stringMatching(/^input\[1\]: no stored output item msg_nowhere/),
    });
    expect(gw.bodies(gw.main)).toHaveLength(0);
  });
});

describe("LangChain's ChatOpenAI against the model-gateway mode", () => {
  const chat = (gw: ModelGateway) =>
    new ChatOpenAI({ model: MODEL, apiKey: gw.key, configuration: { baseURL: gw.url }, maxRetries: 0 });

  it("binds tools: the call comes back as tool_calls on the AIMessage, and its result goes back", async () => {
    const gw = await startModelGateway();
    gw.main.script([
      { type: "tool_calls", calls: [{ id: "call_l1", name: "get_weather", arguments: { city: "Oslo" } }] },
      { type: "reply", text: "Snow in Oslo." },
    ]);
    const getWeather = lcTool(async ({ city }: { city: string }) => JSON.stringify({ city, sky: "snow" }), {
      name: "get_weather",
      description: "The weather in a city",
      schema: z.object({ city: z.string() }),
    });
    const model = chat(gw).bindTools([getWeather], { tool_choice: "get_weather" });
    const ask = { role: "user" as const, content: "Weather in Oslo?" };
    const reply = await model.invoke([ask]);
    expect(reply.tool_calls).toEqual([
      expect.objectContaining({ id: "call_l1", name: "get_weather", args: { city: "Oslo" } }),
    ]);
    const first = gw.bodies(gw.main)[0];
    expect(first).toMatchObject({
      tools: [
        {
          type: "function",
          function: expect.objectContaining({ name: "get_weather", parameters: cityParameters }),
        },
      ],
      tool_choice: { type: "function", function: { name: "get_weather" } },
    });
    const call = reply.tool_calls?.[0];
    if (call === undefined) throw new Error("no tool call");
    const result = await getWeather.invoke(call);
    const final = await chat(gw).bindTools([getWeather]).invoke([ask, reply, result]);
    expect(final.content).toBe("Snow in Oslo.");
    expect(gw.bodies(gw.main)[1]?.messages).toEqual([
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          {
            id: "call_l1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_l1", content: '{"city":"Oslo","sky":"snow"}' },
    ]);
  });

  it("gives structured output from a zod schema", async () => {
    const gw = await startModelGateway();
    gw.main.script([{ type: "reply", text: '{"name":"Ada","age":36}' }]);
    const structured = chat(gw).withStructuredOutput(person, { name: "person" });
    const answer = await structured.invoke("Who wrote the first program?");
    expect(answer).toEqual({ name: "Ada", age: 36 });
    expect(gw.bodies(gw.main)[0]?.response_format).toEqual({
      type: "json_schema",
      json_schema: expect.objectContaining({
        name: "person",
        schema: personSchema,
      }),
    });
  });
});
