// The model-gateway mode to an Anthropic provider: the openai client's request is translated to the
// Messages wire (system, tools, tool_choice, images, stop_sequences, sampling; response_format as an
// instruction in the system prompt) and the answer back to OpenAI's, whole and streamed; the
// Anthropic-wire peer's log shows what the provider got.
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { startModelGateway } from "./helpers/model-gateway.js";

const tool = {
  type: "function" as const,
  function: {
    name: "lookup",
    description: "Look a word up",
    parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  },
};

const PNG_DATA =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

describe("the model-gateway mode to an Anthropic provider", () => {
  it("translates tools, tool_choice, images, stop, sampling and system, and the tool call back", async () => {
    const gw = await startModelGateway();
    gw.peer.script([
      { type: "tool_use", calls: [{ id: "toolu_1", name: "lookup", input: { word: "tenax" } }] },
    ]);
    const answer = await gw.client.chat.completions.create({
      model: "claude/claude-test",
      messages: [
        { role: "system", content: "Be brief." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is this word, and this image?" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_DATA}` } },
          ],
        },
      ],
      tools: [tool],
      tool_choice: "required",
      parallel_tool_calls: false,
      stop: ["###"],
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 200,
      seed: 5,
      user: "user-9",
      response_format: { type: "json_object" },
      ...({ vendor_option: 1 } as object),
    });
    expect(answer.choices[0]?.finish_reason).toBe("tool_calls");
    expect(answer.choices[0]?.message.tool_calls).toEqual([
      { id: "toolu_1", type: "function", function: { name: "lookup", arguments: '{"word":"tenax"}' } },
    ]);
    const sent = gw.peer.requests()[0]?.body as Record<string, unknown>;
    expect(sent).toMatchObject({
      model: "claude-test",
      max_tokens: 200,
      stream: true,
      tools: [
        {
          name: "lookup",
          description: "Look a word up",
          input_schema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
        },
      ],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      stop_sequences: ["###"],
      temperature: 0.3,
      top_p: 0.8,
      metadata: { user_id: "user-9" },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this word, and this image?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_DATA } },
          ],
        },
      ],
    });
    // The Messages API has no JSON mode every model takes: the format is asked for in the system prompt.
    expect(String(sent.system)).toMatch(/^Be brief\.\n\nAnswer with a single JSON object and nothing else/);
    // Neither a seed, nor OpenAI-wire fields Tenax does not know, are sent to the Messages API.
    expect(sent).not.toHaveProperty("seed");
    expect(sent).not.toHaveProperty("vendor_option");
    expect(sent).not.toHaveProperty("response_format");
  });

  it("sends a tool result as a tool_result block and maps end_turn to stop", async () => {
    const gw = await startModelGateway();
    gw.peer.script([{ type: "reply", text: "It means tenacious." }]);
    const answer = await gw.client.chat.completions.create({
      model: "claude/claude-test",
      messages: [
        { role: "user", content: "Look up tenax" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "toolu_1", type: "function", function: { name: "lookup", arguments: '{"word":"tenax"}' } },
          ],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "Latin: holding fast" },
      ],
      tools: [tool],
    });
    expect(answer.choices[0]?.message.content).toBe("It means tenacious.");
    expect(answer.choices[0]?.finish_reason).toBe("stop");
    expect(answer.model).toBe("claude/claude-test");
    expect((gw.peer.requests()[0]?.body as { messages?: unknown } | undefined)?.messages).toEqual([
      { role: "user", content: "Look up tenax" },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "lookup", input: { word: "tenax" } }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "Latin: holding fast" }],
      },
    ]);
  });

  it("streams a tool use as OpenAI tool-call deltas", async () => {
    const gw = await startModelGateway();
    gw.peer.script([
      {
        type: "tool_use",
        text: "Looking.",
        chunk_size: 3,
        calls: [{ id: "toolu_9", name: "lookup", input: { word: "x" } }],
      },
    ]);
    const chunks: ChatCompletionChunk[] = [];
    const stream = await gw.client.chat.completions.create({
      model: "claude/claude-test",
      messages: [{ role: "user", content: "Look up x" }],
      tools: [tool],
      stream: true,
    });
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("Looking.");
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toEqual({
      index: 0,
      id: "toolu_9",
      type: "function",
      function: { name: "lookup", arguments: "" },
    });
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.map((d) => d.function?.arguments ?? "").join("")).toBe('{"word":"x"}');
    expect(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)).toEqual(["tool_calls"]);
  });

  it("falls back from an overloaded Anthropic model to an OpenAI-compatible one, with the same tools", async () => {
    const gw = await startModelGateway();
    const overloaded = {
      type: "error" as const,
      status: 529,
      error_type: "overloaded_error",
      message: "Overloaded",
    };
    gw.peer.script([overloaded, overloaded, overloaded]);
    gw.backup.script([{ type: "reply", text: "backup here" }]);
    const answer = await gw.client.chat.completions.create({
      model: "claude/claude-test",
      messages: [{ role: "user", content: "hello" }],
      tools: [tool],
      stop: ["###"],
    });
    expect(answer.choices[0]?.message.content).toBe("backup here");
    expect(answer.model).toBe("backup/echo");
    expect(gw.peer.requests()).toHaveLength(3);
    // The fallback speaks its own wire: OpenAI's tools and stop, as the client sent them.
    expect(gw.backup.requests()[0]?.body).toMatchObject({ tools: [tool], stop: ["###"] });
  });
});
