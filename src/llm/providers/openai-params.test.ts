// The Chat Completions body with each tool's JSON made once per tool object: the same JSON as the
// whole request serialized at once, Tenax's tools over a caller's, none when there are none.
import { describe, expect, it } from "vitest";
import type { ChatRequest, ToolSpec } from "../provider.js";
import { chatBody, toParams } from "./openai-params.js";

const tool: ToolSpec = {
  name: "read_file",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

describe("the Chat Completions body", () => {
  it("is the request's JSON, with the tools set in as text", () => {
    const request: ChatRequest = {
      model: "m",
      messages: [{ role: "user", content: 'say "hi"' }],
      tools: [tool, { ...tool, name: "write_file", strict: true }],
      max_output_tokens: 10,
      params: { temperature: 0.5 },
    };
    const body = chatBody(request, "max_tokens");
    expect(JSON.parse(body)).toEqual(JSON.parse(JSON.stringify(toParams(request, "max_tokens"))));
    // The second call reuses each tool's JSON: the same text.
    expect(chatBody(request, "max_tokens")).toBe(body);
  });

  it("sends Tenax's tools over a caller's unknown `tools`, and a caller's when Tenax has none", () => {
    const extra = { tools: [{ type: "function", function: { name: "theirs" } }], logit_bias: { 1: 2 } };
    const ours = JSON.parse(
      chatBody(
        { model: "m", messages: [{ role: "user", content: "x" }], tools: [tool], extra },
        "max_tokens",
      ),
    );
    expect(ours.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["read_file"]);
    expect(ours.logit_bias).toEqual({ 1: 2 });
    const theirs = JSON.parse(
      chatBody({ model: "m", messages: [{ role: "user", content: "x" }], extra }, "max_tokens"),
    );
    expect(theirs.tools).toEqual(extra.tools);
    expect(JSON.parse(chatBody({ model: "m", messages: [] }, "max_tokens"))).not.toHaveProperty("tools");
  });
});
