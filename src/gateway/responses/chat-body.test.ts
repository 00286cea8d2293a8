// A Responses request as a chat completions body, and a chat.completion as a Response: function
// call items and their outputs, function tools, tool_choice, text.format, limits and images; and
// what the request schema refuses by name.
import { describe, expect, it } from "vitest";
import { HttpError } from "../../http/http-error.js";
import { chatBody, inputItems, itemsToMessages } from "./chat-body.js";
import { parseResponsesRequest } from "./request.js";
import { completionToResponse, outputAsInput } from "./response-object.js";

const body = (raw: Record<string, unknown>) => {
  const request = parseResponsesRequest(raw);
  return chatBody({
    request,
    history: [],
    messages: itemsToMessages(inputItems(request.input)),
    stream: false,
  });
};

function refused(raw: unknown): HttpError {
  try {
    parseResponsesRequest(raw);
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("the request was accepted");
}

describe("Responses request → chat completions body", () => {
  it("function calls join the assistant message; their outputs become tool messages", () => {
    const chat = body({
      model: "sim/echo",
      instructions: "be terse",
      input: [
        { role: "user", content: "weather in Oslo and the time?" },
        { type: "function_call", call_id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' },
        { type: "function_call", call_id: "call_b", name: "get_time", arguments: "{}" },
        { type: "function_call_output", call_id: "call_a", output: "sunny" },
        { type: "function_call_output", call_id: "call_b", output: [{ type: "input_text", text: "noon" }] },
      ],
      tools: [
        {
          type: "function",
          name: "get_weather",
          description: "weather",
          parameters: { type: "object" },
          strict: true,
        },
        { type: "function", name: "get_time" },
      ],
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: false,
      max_output_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      user: "u1",
      text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
    });
    expect(chat).toEqual({
      model: "sim/echo",
      stream: false,
      messages: [
        { role: "system", content: "be terse" },
        { role: "user", content: "weather in Oslo and the time?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_a",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
            },
            { id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } },
          ],
        },
        { role: "tool", tool_call_id: "call_a", content: "sunny" },
        { role: "tool", tool_call_id: "call_b", content: "noon" },
      ],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "weather",
            parameters: { type: "object" },
            strict: true,
          },
        },
        { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } },
      ],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      max_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      user: "u1",
      response_format: {
        type: "json_schema",
        json_schema: { name: "answer", schema: { type: "object" }, strict: true },
      },
    });
  });

  it("images become image_url parts; json_object; a stream asks for usage", () => {
    const request = parseResponsesRequest({
      model: "sim/echo",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "what is this?" },
            { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "low" },
          ],
        },
      ],
      text: { format: { type: "json_object" } },
    });
    const chat = chatBody({
      request,
      history: [],
      messages: itemsToMessages(inputItems(request.input)),
      stream: true,
    });
    expect(chat.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
        ],
      },
    ]);
    expect(chat.response_format).toEqual({ type: "json_object" });
    expect(chat.stream_options).toEqual({ include_usage: true });
  });

  it("a chat.completion with tool calls is a Response with function_call items, replayable as input", () => {
    let n = 0;
    const meta = {
      id: "resp_1",
      createdAt: 1,
      request: parseResponsesRequest({ model: "sim/echo", input: "hi" }),
    };
    const response = completionToResponse(
      meta,
      {
        choices: [
          {
            message: {
              content: null,
              tool_calls: [
                { id: "call_a", type: "function", function: { name: "get_weather", arguments: "{}" } },
              ],
            },
            finish_reason: "tool_calls",
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
      },
      (prefix) => `${prefix}${++n}`,
    );
    expect(response).toMatchObject({
      status: "completed",
      output_text: "",
      output: [
        { type: "function_call", id: "fc_1", call_id: "call_a", name: "get_weather", arguments: "{}" },
      ],
      usage: { input_tokens: 5, output_tokens: 3, total_tokens: 8 },
    });
    expect(itemsToMessages(outputAsInput(response.output))).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      },
    ]);
  });
});

describe("what the request schema refuses, by name", () => {
  it.each([
    [{ model: "m", input: "x", tools: [{ type: "web_search" }] }, /tools\[0\].*web_search/],
    [{ model: "m", input: "x", background: true }, /background/],
    [{ model: "m", input: "x", reasoning: { effort: "high" } }, /reasoning/],
    [{ model: "m", input: "x", conversation: "c1" }, /conversation/],
    [{ model: "m", input: "x", include: ["reasoning.encrypted_content"] }, /include/],
    [{ model: "m", input: [{ type: "item_reference", id: "msg_1" }] }, /input\[0\].*item_reference/],
    [{ model: "m", input: "x", truncation: "auto" }, /truncation/],
  ])("%j", (raw, message) => {
    const error = refused(raw);
    expect(error.status).toBe(400);
    expect(error.code).toBe("unsupported_field");
    expect(error.message).toMatch(message);
  });

  it("an unknown field and a bad value are 400s that name the field", () => {
    expect(refused({ model: "m", input: "x", frobnicate: true }).message).toMatch(
      /unknown field.*frobnicate/,
    );
    const bad = refused({ model: "m", input: "x", temperature: 7 });
    expect(bad.message).toMatch(/^temperature:/);
    expect(bad.toJSON().error).toMatchObject({ code: "invalid_field", param: "temperature" });
    expect(refused({ input: "x" }).message).toMatch(/^model:/);
    // Which field of which item.
    expect(refused({ model: "m", input: ["x", { type: "function_call", name: "f" }] }).message).toMatch(
      /^input\.0: /,
    );
    expect(
      refused({ model: "m", input: [{ type: "function_call", name: "f", arguments: "{}" }] }).message,
    ).toMatch(/^input\.0\.call_id:/);
    expect(refused({ model: "m", input: "x", tool_choice: "sometimes" }).message).toMatch(
      /tool_choice: expected "auto"/,
    );
    expect(
      refused({ model: "m", input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] })
        .message,
    ).toMatch(/input_file parts are not served/);
    expect(() =>
      body({ model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "f1" }] }] }),
    ).toThrow(/file_id is not served/);
  });

  it("takes what the AI SDK and LangChain send", () => {
    expect(() =>
      parseResponsesRequest({
        model: "tenax",
        input: [{ type: "message", role: "user", content: "hi" }],
        stream: false,
        text: {},
      }),
    ).not.toThrow();
  });
});
