import { describe, expect, it } from "vitest";
import { HttpError } from "../http/http-error.js";
import { parseChatRequest } from "./chat-request.js";

function refusal(body: unknown): HttpError {
  try {
    parseChatRequest(body);
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("parseChatRequest", () => {
  it("accepts the usual OpenAI fields and joins text parts", () => {
    const parsed = parseChatRequest({
      model: "gpt-x",
      temperature: 0.2,
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
        },
      ],
    });
    expect(parsed).toEqual({
      messages: [{ role: "user", content: "ab" }],
      stream: true,
      includeUsage: true,
      system: null,
      maxTokens: 10,
      params: { temperature: 0.2 },
      responseFormat: null,
      extra: {},
    });
  });

  it("takes response_format for every model call of the turn, checked like a model call's", () => {
    const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"] };
    const parsed = parseChatRequest({
      messages: [{ role: "user", content: "x" }],
      response_format: { type: "json_schema", json_schema: { name: "thing", schema, strict: true } },
    });
    expect(parsed.responseFormat).toEqual({ type: "json_schema", name: "thing", schema, strict: true });
    expect(
      parseChatRequest({
        messages: [{ role: "user", content: "x" }],
        response_format: { type: "json_object" },
      }).responseFormat,
    ).toEqual({ type: "json_object" });
    const bad = refusal({ messages: [{ role: "user", content: "x" }], response_format: { type: "yaml" } });
    expect([bad.status, bad.code, bad.message.startsWith("response_format")]).toEqual([
      400,
      "invalid_field",
      true,
    ]);
  });

  it("ignores a refused field left empty: tools: [] or null asks for nothing", () => {
    const parsed = parseChatRequest({
      messages: [{ role: "user", content: "x" }],
      tools: [],
      tool_choice: null,
      response_format: null,
    });
    expect(parsed.messages).toEqual([{ role: "user", content: "x" }]);
    expect(refusal({ messages: [{ role: "user", content: "x" }], tools: [{ type: "function" }] }).code).toBe(
      "unsupported_field",
    );
  });

  it.each([
    [[], "invalid_body", "a JSON object"],
    [{ messages: [{ role: "user", content: "x" }], colour: 1 }, "unknown_field", "colour"],
    [{ messages: [{ role: "user", content: "x" }], tool_choice: "auto" }, "unsupported_field", "tool_choice"],
    [{ messages: [{ role: "user", content: "x" }], n: 2 }, "invalid_field", "n must be 1"],
    [{ messages: [{ role: "user", content: "x" }], stream: "yes" }, "invalid_field", "stream"],
    [{ messages: "x" }, "invalid_field", "non-empty array"],
    [{ messages: [{ role: "robot", content: "x" }] }, "invalid_field", "messages[0].role"],
    [{ messages: [{ role: "user", content: [{ type: "image_url" }] }] }, "invalid_field", "only text parts"],
  ])("refuses %j with %s", (body, code, words) => {
    const error = refusal(body);
    expect(error.status).toBe(400);
    expect(error.code).toBe(code);
    expect(error.message).toContain(words);
  });
});
