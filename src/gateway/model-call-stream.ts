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

/** One piece of the reply, keyed by what it adds to: the text, a call's header or its arguments. */
interface Piece {
  key: string;
  text: string;
  /** The chunk delta that carries it. */
  delta: () => Record<string, unknown>;
}

export class ModelCallStream {
  private readonly sse: SseStream;
  private ended = false;
  /** What the client has, per key, of the reply in progress. */
  private readonly sent = new Map<string, string>();
  /** After a restart: the new attempt so far, per key; null when no restart is being caught up. */
  private replay: Map<string, string> | null = null;
  private readonly replayPieces: Piece[] = [];
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
          this.piece({ key: "text", text: event.delta, delta: () => ({ content: event.delta }) });
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
            delta: () => ({ tool_calls: [{ index, function: { arguments: event.arguments } }] }),
          });
        return;
      }
      case "logprobs":
        // Sent with no delta of their own, after the tokens they describe.
        if (this.replay === null)
          this.write(this.chunkText({}, null, { content: event.content, refusal: null }));
        return;
      case "stream_restart":
      case "fallback":
        if (this.sent.size > 0) this.replay = new Map();
        this.replayPieces.length = 0;
        return;
      default:
        return;
    }
  }

  private piece(piece: Piece): void {
    if (this.replay === null) {
      this.sent.set(piece.key, (this.sent.get(piece.key) ?? "") + piece.text);
      this.write(this.chunkText(piece.delta()));
      return;
    }
    this.replayPieces.push(piece);
    const now = (this.replay.get(piece.key) ?? "") + piece.text;
    this.replay.set(piece.key, now);
    const had = this.sent.get(piece.key) ?? "";
    if (had.startsWith(now)) return; // still repeating what the client has
    if (now.startsWith(had) && piece.key.endsWith(":args") === false && piece.key !== "text") {
      // A call's header the client does not have yet: send it as it is.
      this.sent.set(piece.key, now);
      this.write(this.chunkText(piece.delta()));
      return;
    }
    if (now.startsWith(had)) {
      const fresh = now.slice(had.length);
      this.sent.set(piece.key, now);
      this.write(this.chunkText(this.freshDelta(piece, fresh)));
      return;
    }
    this.restart();
  }

  /** The part of a piece the client does not have yet, in the delta that carries it. */
  private freshDelta(piece: Piece, fresh: string): Record<string, unknown> {
    if (piece.key === "text") return { content: fresh };
    const index = Number(piece.key.split(":")[1]);
    return { tool_calls: [{ index, function: { arguments: fresh } }] };
  }

  /** The new attempt says something else: the client drops what it has and gets it from the start. */
  private restart(): void {
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
    const pieces = [...this.replayPieces];
    this.replay = null;
    this.replayPieces.length = 0;
    this.sent.clear();
    for (const p of pieces) this.piece(p);
  }

  finish(completion: Completion, fellBack: boolean): void {
    if (this.ended) return;
    // A restarted attempt that ended shorter than what was sent is not what the client has.
    if (this.replay !== null) {
      const replay = this.replay;
      if ([...this.sent].some(([key, text]) => (replay.get(key) ?? "") !== text)) this.restart();
      this.replay = null;
    }
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
