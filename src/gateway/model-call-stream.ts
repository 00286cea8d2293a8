// The SSE answer to one model call, in OpenAI's chunk format: text and tool-call pieces
// (`delta.tool_calls[{index, id, type, function: {name, arguments}}]`) as the provider writes them,
// then the finish reason, usage when asked, and [DONE]; or one final `data: {"error"}` event. The
// call is append-only: a stream the resilience core restarts goes on from what the client has, or
// the call fails (told-reply.ts), so nothing sent is ever taken back.
import type { ServerResponse } from "node:http";
import { SseStream } from "../core/sse.js";
import type { HttpError } from "../http/http-error.js";
import type { Completion } from "../llm/model-call.js";
import type { RouteEvent } from "../llm/route-events.js";
import { type AnswerMeta, openAIFinishReason, tenaxPart, wireUsage } from "./model-call-answer.js";

export class ModelCallStream {
  private readonly sse: SseStream;
  private ended = false;
  /** Tool calls whose header (id, name) the client has, by index. */
  private readonly headed = new Set<number>();

  constructor(
    res: ServerResponse,
    private readonly meta: AnswerMeta,
    private readonly model: string,
    private readonly includeUsage: boolean,
    maxBufferedBytes?: number,
  ) {
    this.sse = new SseStream(res, {
      kind: "chat",
      ...(maxBufferedBytes === undefined ? {} : { maxBufferedBytes }),
    });
  }

  open(): void {
    this.sse.open({ "x-session-id": this.meta.sessionId });
    this.chunk({ role: "assistant", content: "" });
  }

  get dropped(): boolean {
    return this.sse.dropped;
  }

  onEvent(event: RouteEvent): void {
    switch (event.type) {
      case "text":
        if (event.delta !== "") this.chunk({ content: event.delta });
        return;
      case "tool_call_delta": {
        const { index } = event;
        if (event.id !== undefined || event.name !== undefined) {
          if (!this.headed.has(index)) {
            const fn = { name: event.name ?? "", arguments: "" };
            this.chunk({ tool_calls: [{ index, id: event.id ?? "", type: "function", function: fn }] });
            this.headed.add(index);
          } else if (event.name) this.chunk({ tool_calls: [{ index, function: { name: event.name } }] });
        }
        if (event.arguments !== "")
          this.chunk({ tool_calls: [{ index, function: { arguments: event.arguments } }] });
        return;
      }
      case "logprobs":
        // Sent with no delta of their own, after the tokens they describe.
        this.write(this.chunkText({}, null, { content: event.content, refusal: null }));
        return;
      default:
        return;
    }
  }

  finish(completion: Completion, fellBack: boolean): void {
    if (this.ended) return;
    // A call the provider gave only whole reaches the client whole.
    completion.tool_calls.forEach((call, index) => {
      if (this.headed.has(index)) return;
      this.write(
        this.chunkText({
          tool_calls: [
            {
              index,
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: call.arguments },
            },
          ],
        }),
      );
    });
    const last = {
      ...this.base(completion),
      choices: [
        { index: 0, delta: {}, finish_reason: openAIFinishReason(completion.finish_reason), logprobs: null },
      ],
      tenax: tenaxPart(this.meta, completion, fellBack),
    };
    this.write(`data: ${JSON.stringify(last)}\n\n`);
    if (this.includeUsage)
      this.write(
        `data: ${JSON.stringify({ ...this.base(completion), choices: [], usage: wireUsage(completion.usage) })}\n\n`,
      );
    this.ended = true;
    this.sse.end("data: [DONE]\n\n");
  }

  /** A failure after the stream opened: one error event in the OpenAI shape, no finish, no [DONE]. */
  fail(error: HttpError): void {
    if (this.ended) return;
    this.ended = true;
    this.sse.end(`data: ${JSON.stringify(error.toJSON())}\n\n`);
  }

  private base(completion: Completion | null = null) {
    return {
      id: this.meta.id,
      object: "chat.completion.chunk",
      created: this.meta.created,
      model: completion ? `${completion.provider}/${completion.model}` : this.model,
    };
  }

  private chunkText(
    delta: Record<string, unknown>,
    finish: string | null = null,
    logprobs: unknown = null,
  ): string {
    return `data: ${JSON.stringify({
      ...this.base(),
      choices: [{ index: 0, delta, finish_reason: finish, logprobs }],
    })}\n\n`;
  }

  private chunk(delta: Record<string, unknown>): void {
    this.write(this.chunkText(delta));
  }

  private write(text: string): void {
    this.sse.write(text);
  }
}
