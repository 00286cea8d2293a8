// The SSE answer to one model call, in OpenAI's chunk format: text and tool-call pieces
// (`delta.tool_calls[{index, id, type, function: {name, arguments}}]`) as the provider writes them,
// then the finish reason, usage when asked, and [DONE]; or one final `data: {"error"}` event. When
// the resilience core starts the reply over (a retried stream, a fallback), what the client already
// has is not sent twice; a new attempt that says something else is announced by a `stream_restart`
// event (a chunk with no choices) telling the client to drop what it has, and is then sent whole.
import type { ServerResponse } from "node:http";
import { SseStream } from "../core/sse.js";
import type { HttpError } from "../http/http-error.js";
import type { Completion } from "../llm/model-call.js";
import type { RouteEvent } from "../llm/route-events.js";
import { type AnswerMeta, openAIFinishReason, tenaxPart, wireUsage } from "./model-call-answer.js";
import { type CatchUpPiece, type CatchUpRestart, StreamCatchUp } from "./stream-catch-up.js";

/** One piece of the reply, keyed by what it adds to: the text, a call's header or its arguments. */
interface Piece extends CatchUpPiece {
  /** The chunk delta that carries the part of it the client lacks (a call's header goes whole). */
  delta: (fresh: string) => Record<string, unknown>;
}

export class ModelCallStream {
  private readonly sse: SseStream;
  private ended = false;
  /** What the client has, per key, of the reply in progress. */
  private readonly catchUp = new StreamCatchUp<Piece>();
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
        if (event.delta !== "")
          this.piece({ key: "text", text: event.delta, delta: (fresh) => ({ content: fresh }) });
        return;
      case "tool_call_delta": {
        const { index } = event;
        if (event.id !== undefined || event.name !== undefined) {
          const id = event.id ?? "";
          const name = event.name ?? "";
          this.piece({
            key: `call:${index}:name`,
            text: name,
            delta: () => ({
              tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }],
            }),
          });
          this.headed.add(index);
        }
        if (event.arguments !== "")
          this.piece({
            key: `call:${index}:args`,
            text: event.arguments,
            delta: (fresh) => ({ tool_calls: [{ index, function: { arguments: fresh } }] }),
          });
        return;
      }
      case "logprobs":
        // Sent with no delta of their own, after the tokens they describe.
        if (!this.catchUp.replaying)
          this.write(this.chunkText({}, null, { content: event.content, refusal: null }));
        return;
      case "stream_restart":
      case "fallback":
        this.catchUp.restarted();
        return;
      default:
        return;
    }
  }

  private piece(piece: Piece): void {
    const step = this.catchUp.add(piece);
    if (step.type === "send") this.write(this.chunkText(piece.delta(step.fresh)));
    if (step.type === "restart") this.restart(step);
  }

  /** The new attempt says something else: the client drops what it has and gets it from the start. */
  private restart(restart: CatchUpRestart<Piece>): void {
    this.write(
      `event: stream_restart\ndata: ${JSON.stringify({
        ...this.base(),
        choices: [],
        tenax: {
          event: "stream_restart",
          message:
            "the provider restarted its reply and it differs from what was sent: drop this reply so far",
        },
      })}\n\n`,
    );
    for (const p of restart.pieces) this.write(this.chunkText(p.delta(p.text)));
  }

  finish(completion: Completion, fellBack: boolean): void {
    if (this.ended) return;
    // A restarted attempt that ended shorter than what was sent is not what the client has.
    const restart = this.catchUp.settle();
    if (restart) this.restart(restart);
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
