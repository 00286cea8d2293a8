// What a request asks of the simulator's answer, over the official openai client and a real socket:
// JSON valid for a json_schema (streamed or not), any JSON object for json_object, a forced tool
// call with valid arguments, stop sequences and the output cap, also on a scripted reply.
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type Simulator, startSimulator } from "./server.js";

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function client(): Promise<{ s: Simulator; openai: OpenAI }> {
  sim = await startSimulator();
  return { s: sim, openai: new OpenAI({ baseURL: sim.url, apiKey: "k", maxRetries: 0 }) };
}

const hello = [{ role: "user" as const, content: "hello there, how are you" }];
const person = z.object({
  name: z.string(),
  age: z.number().int().min(18),
  role: z.enum(["admin", "user"]),
  tags: z.array(z.string()).min(2),
  address: z.object({ city: z.string(), zip: z.string().length(5) }),
});
const personFormat = {
  type: "json_schema" as const,
  json_schema: { name: "person", strict: true, schema: z.toJSONSchema(person) as Record<string, unknown> },
};

describe("the simulator honours the shape a request asks for", () => {
  it("answers response_format json_schema with JSON valid for the schema, whole and streamed", async () => {
    const { openai } = await client();
    const whole = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      response_format: personFormat,
    });
    expect(whole.choices[0]?.finish_reason).toBe("stop");
    const parsed = person.parse(JSON.parse(whole.choices[0]?.message.content ?? ""));
    expect(parsed.tags).toHaveLength(2);

    const stream = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      response_format: personFormat,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(person.parse(JSON.parse(text))).toEqual(parsed);
  });

  it("answers json_object with a JSON object", async () => {
    const { openai } = await client();
    const reply = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      response_format: { type: "json_object" },
    });
    expect(JSON.parse(reply.choices[0]?.message.content ?? "")).toEqual({
      echo: "echo: hello there, how are you",
    });
  });

  it("answers a tool_choice that names a function with a call of it, arguments valid for its parameters", async () => {
    const { openai } = await client();
    const tools = [
      {
        type: "function" as const,
        function: { name: "lookup", parameters: { type: "object", properties: {} } },
      },
      {
        type: "function" as const,
        function: { name: "extract", parameters: z.toJSONSchema(person) as Record<string, unknown> },
      },
    ];
    const reply = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      tools,
      tool_choice: { type: "function", function: { name: "extract" } },
    });
    const choice = reply.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type === "function" && call.function.name).toBe("extract");
    expect(() =>
      person.parse(JSON.parse(call?.type === "function" ? call.function.arguments : "")),
    ).not.toThrow();

    const required = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      tools,
      tool_choice: "required",
    });
    const first = required.choices[0]?.message.tool_calls?.[0];
    expect(first?.type === "function" && first.function).toEqual({ name: "lookup", arguments: "{}" });
    // With `auto` the model may answer in words, and the simulator echoes as always.
    const auto = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      tools,
      tool_choice: "auto",
    });
    expect(auto.choices[0]?.message.content).toBe("echo: hello there, how are you");

    await expect(
      openai.chat.completions.create({
        model: "echo",
        messages: hello,
        tools,
        tool_choice: { type: "function", function: { name: "missing" } },
      }),
    ).rejects.toMatchObject({
      status: 400,
      param: "tool_choice",
      message: expect.stringContaining("missing"),
    });
  });

  it("cuts at the first stop sequence with finish_reason stop", async () => {
    const { openai } = await client();
    const reply = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      stop: ["how", "there"],
    });
    expect(reply.choices[0]?.message.content).toBe("echo: hello ");
    expect(reply.choices[0]?.finish_reason).toBe("stop");
    expect(reply.usage?.completion_tokens).toBe(3);
  });

  it("cuts at max_tokens and max_completion_tokens (four characters a token) with finish_reason length, whole and streamed", async () => {
    const { openai } = await client();
    const capped = await openai.chat.completions.create({ model: "echo", messages: hello, max_tokens: 2 });
    expect(capped.choices[0]).toMatchObject({ finish_reason: "length", message: { content: "echo: he" } });
    expect(capped.usage?.completion_tokens).toBe(2);
    const newer = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      max_completion_tokens: 3,
    });
    expect(newer.choices[0]?.message.content).toBe("echo: hello ");

    const stream = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      max_tokens: 2,
      stream: true,
    });
    let text = "";
    const finishes: string[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
    }
    expect([text, finishes]).toEqual(["echo: he", ["length"]]);
  });

  it("cuts a scripted reply the same way, whichever comes first", async () => {
    const { s, openai } = await client();
    s.script([
      { type: "reply", text: "one. two. three." },
      { type: "reply", text: "one. two. three." },
    ]);
    const stopFirst = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      stop: ".",
      max_tokens: 3,
    });
    expect(stopFirst.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: "one" } });
    const capFirst = await openai.chat.completions.create({
      model: "echo",
      messages: hello,
      stop: "three",
      max_tokens: 2,
    });
    expect(capFirst.choices[0]).toMatchObject({ finish_reason: "length", message: { content: "one. two" } });
  });

  it("refuses a response_format it cannot read, naming the field", async () => {
    const { openai } = await client();
    await expect(
      openai.chat.completions.create({
        model: "echo",
        messages: hello,
        response_format: { type: "json_schema" } as never,
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("response_format") });
  });
});
