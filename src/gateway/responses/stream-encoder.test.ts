// The Responses stream encoder fed chat chunks (text, then two tool calls streamed in pieces, a
// restarted reply, a failure) and read back through the official openai client's own accumulator:
// every event it emits must build the same Response the encoder ends with.

import { accumulateResponse } from "openai/lib/responses/ResponseAccumulator";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import type { ChatChunk } from "./chat-answer.js";
import { parseResponsesRequest } from "./request.js";
import type { ResponseMeta } from "./response-object.js";
import { type ResponseEvent, ResponseStreamEncoder } from "./stream-encoder.js";

function setup() {
  let n = 0;
  const meta: ResponseMeta = {
    id: "resp_test",
    createdAt: 1_700_000_000,
    request: parseResponsesRequest({ model: "sim/echo", input: "weather?" }),
  };
  const events: ResponseEvent[] = [];
  const encoder = new ResponseStreamEncoder(
    meta,
    (prefix) => `${prefix}${++n}`,
    (e) => events.push(e),
  );
  return { encoder, events };
}

const text = (content: string): ChatChunk => ({ choices: [{ delta: { content } }] });
const call = (index: number, fields: { id?: string; name?: string; arguments?: string }): ChatChunk => ({
  choices: [
    {
      delta: {
        tool_calls: [
          {
            index,
            id: fields.id ?? null,
            function: { name: fields.name ?? null, arguments: fields.arguments ?? null },
          },
        ],
      },
    },
  ],
});

/** The events as the openai client's accumulator sees them, ending with its snapshot. */
function accumulated(events: ResponseEvent[]) {
  let snapshot: ReturnType<typeof accumulateResponse> | undefined;
  for (const event of events)
    snapshot = accumulateResponse(event as unknown as ResponseStreamEvent, snapshot);
  return snapshot;
}

describe("ResponseStreamEncoder", () => {
  it("text then two streamed tool calls: items opened, fed and closed in order", () => {
    const { encoder, events } = setup();
    encoder.start();
    encoder.chunk(text("Let me "));
    encoder.chunk(text("check."));
    encoder.chunk(call(0, { id: "call_a", name: "get_weather", arguments: '{"city":' }));
    encoder.chunk(call(0, { arguments: '"Oslo"}' }));
    encoder.chunk(call(1, { id: "call_b", name: "get_time", arguments: "{}" }));
    encoder.chunk({ choices: [{ delta: {}, finish_reason: "tool_calls" }] });
    encoder.chunk({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } });
    const response = encoder.end();
    encoder.completed(response);

    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => `${e.type}${"output_index" in e ? `@${e.output_index}` : ""}`)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added@0",
      "response.content_part.added@0",
      "response.output_text.delta@0",
      "response.output_text.delta@0",
      "response.output_text.done@0",
      "response.content_part.done@0",
      "response.output_item.done@0",
      "response.output_item.added@1",
      "response.function_call_arguments.delta@1",
      "response.function_call_arguments.delta@1",
      "response.function_call_arguments.done@1",
      "response.output_item.done@1",
      "response.output_item.added@2",
      "response.function_call_arguments.delta@2",
      "response.function_call_arguments.done@2",
      "response.output_item.done@2",
      "response.completed",
    ]);
    expect(response).toMatchObject({
      status: "completed",
      output_text: "Let me check.",
      usage: { input_tokens: 12, output_tokens: 7, total_tokens: 19 },
      output: [
        { type: "message", status: "completed", content: [{ type: "output_text", text: "Let me check." }] },
        {
          type: "function_call",
          call_id: "call_a",
          name: "get_weather",
          arguments: '{"city":"Oslo"}',
          status: "completed",
        },
        { type: "function_call", call_id: "call_b", name: "get_time", arguments: "{}", status: "completed" },
      ],
    });
    // The official client builds the very same response from the events.
    const built = accumulated(events);
    expect(built?.output).toEqual(response.output);
    expect(built?.output_text).toBe("Let me check.");
  });

  it("a reply cut by the output limit is incomplete, with exactly the text its deltas carried", () => {
    const { encoder, events } = setup();
    encoder.start();
    encoder.chunk(text("hello "));
    encoder.chunk(text("there"));
    encoder.chunk({ choices: [{ delta: {}, finish_reason: "length" }] });
    const response = encoder.end();
    encoder.completed(response);
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details).toEqual({ reason: "max_output_tokens" });
    const deltas = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : []));
    expect(deltas.join("")).toBe("hello there");
    expect(response.output_text).toBe("hello there");
    expect(events.at(-1)?.type).toBe("response.incomplete");
    expect(accumulated(events)?.output_text).toBe("hello there");
  });

  it("a failure ends with response.failed carrying the error, what was said kept as incomplete", () => {
    const { encoder, events } = setup();
    encoder.start();
    encoder.chunk(text("partial"));
    const failed = encoder.fail({
      code: "provider_unavailable",
      message: "the provider gave up",
      type: "provider_error",
    });
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "provider_unavailable", message: "the provider gave up" },
      output: [{ type: "message", status: "incomplete", content: [{ text: "partial" }] }],
    });
    const last = events.at(-1);
    expect(last).toMatchObject({ type: "response.failed", error: { code: "provider_unavailable" } });
    expect(accumulated(events)?.status).toBe("failed");
  });
});
