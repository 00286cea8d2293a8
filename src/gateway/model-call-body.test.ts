import { describe, expect, it } from "vitest";
import { HttpError } from "../http/http-error.js";
import { openAIFinishReason } from "./model-call-answer.js";
import { parseModelCallBody } from "./model-call-body.js";

const user = { role: "user", content: "hi" };

function refusal(body: Record<string, unknown>): HttpError {
  try {
    parseModelCallBody(body);
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("the model-gateway body", () => {
  it("keeps unknown top-level fields as they came, and only those, for the OpenAI wire", () => {
    const { request } = parseModelCallBody({
      model: "main/m",
      messages: [user],
      temperature: 0.5,
      frequency_penalty: 1,
      vendor: { a: [1, 2] },
    });
    expect(request.extra).toEqual({ vendor: { a: [1, 2] } });
    // A penalty is a sampling field Tenax knows (checked, and sent on the OpenAI wire as it came).
    expect(request.params).toEqual({ temperature: 0.5, frequency_penalty: 1 });
  });

  it("reads null as left out, a string stop as a list, and developer messages as system", () => {
    const { request, stream } = parseModelCallBody({
      model: "main/m",
      messages: [{ role: "developer", content: [{ type: "text", text: "rules" }] }, user],
      stop: "END",
      temperature: null,
      tools: null,
      stream: null,
    });
    expect(stream).toBe(false);
    expect(request.params).toEqual({ stop: ["END"] });
    expect(request.tools).toBeUndefined();
    expect(request.messages[0]).toEqual({ role: "system", content: "rules" });
  });

  it("names the path of a bad field, with param set", () => {
    const error = refusal({ model: "m/x", messages: [user, { role: "tool", content: "r" }] });
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/^messages\[1\]\.tool_call_id: /);
    expect(error.toJSON().error).toMatchObject({ param: "messages[1].tool_call_id", code: "invalid_field" });
    expect(refusal({ model: "m/x", messages: [user], temperature: 3 }).message).toMatch(/^temperature: /);
    expect(refusal({ model: "m/x", messages: [user], n: 2 }).message).toMatch(/^n: only n: 1/);
    expect(refusal({ model: "m/x", messages: [user], functions: [] }).message).toMatch(/send tools instead/);
    expect(
      refusal({ model: "m/x", messages: [{ role: "user", content: "x", surprise: 1 }] }).message,
    ).toMatch(/^messages\[0\]: .*surprise/);
  });

  it("takes the tool's name on a tool result (LangChain sends it) and does not send it on", () => {
    const { request } = parseModelCallBody({
      model: "m/x",
      messages: [
        user,
        {
          role: "assistant",
          content: "",
          tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }],
        },
        { role: "tool", content: "found", tool_call_id: "c1", name: "look" },
      ],
    });
    expect(request.messages[2]).toEqual({ role: "tool", content: "found", tool_call_id: "c1" });
  });

  it("drops tool_choice and parallel_tool_calls without tools, which providers refuse", () => {
    const { request } = parseModelCallBody({
      model: "m/x",
      messages: [user],
      tools: [],
      tool_choice: "required",
      parallel_tool_calls: false,
    });
    expect(request).not.toHaveProperty("tool_choice");
    expect(request).not.toHaveProperty("parallel_tool_calls");
  });

  it("says finish reasons in OpenAI's words", () => {
    expect(
      ["end_turn", "tool_use", "max_tokens", "stop_sequence", "tool_calls", "odd"].map(openAIFinishReason),
    ).toEqual(["stop", "tool_calls", "length", "stop", "tool_calls", "stop"]);
  });
});
