// POST /v1/chat/completions: one whole agent turn (tools included) per request, answered in the
// OpenAI wire format, as one chat.completion or as SSE chunks. A turn that completed ends with its
// finish reason (`length` only when the output limit cut the reply); one that failed or was
// interrupted is an OpenAI-shaped error (failure-status.ts), streamed as a final `data: {"error"}`
// event with no finish reason and no [DONE], so no client mistakes it for a whole reply.
import type { ServerResponse } from "node:http";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import type { TurnFailure } from "../agent/turn-failure.js";
import { SseStream } from "../core/sse.js";
import type { HttpError } from "../http/http-error.js";
import { failureError } from "./failure-status.js";

export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
  sessionId: string;
}

/** OpenAI's finish reasons for a completed turn: `length` when the output limit cut its reply. */
export function finishReason(result: TurnResult): "stop" | "length" {
  return result.partial ? "length" : "stop";
}

/** The error a turn that did not complete answers with, naming its session and turn. */
export function turnError(
  result: TurnResult & { failure: TurnFailure },
  headers: Record<string, string> = {},
): HttpError {
  return failureError(
    result.failure,
    {
      session_id: result.session_id,
      turn_id: result.turn_id,
      status: result.status,
      partial: true,
      // What the turn said before it stopped; the transcript keeps it too.
      reply: result.reply,
    },
    headers,
  );
}

/** A completed turn, or the error of one that failed or was interrupted. */
export function failed(result: TurnResult): result is TurnResult & { failure: TurnFailure } {
  return result.failure !== null;
}

export function tenaxField(result: TurnResult) {
  return {
    session_id: result.session_id,
    turn_id: result.turn_id,
    status: result.status,
    partial: result.partial || result.status !== "completed",
    error: result.error,
  };
}

function usageOf(result: TurnResult) {
  const { input_tokens, output_tokens } = result.usage;
  return {
    prompt_tokens: input_tokens,
    completion_tokens: output_tokens,
    total_tokens: input_tokens + output_tokens,
  };
}

function modelOf(meta: CompletionMeta, result: TurnResult | null): string {
  return result?.model ? `${result.model.provider}/${result.model.model}` : meta.model;
}

export function completionBody(meta: CompletionMeta, result: TurnResult) {
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: modelOf(meta, result),
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: result.reply, refusal: null },
        finish_reason: finishReason(result),
        logprobs: null,
      },
    ],
    usage: usageOf(result),
    tenax: tenaxField(result),
  };
}

/**
 * An SSE answer to one turn: chunks as text arrives, then the final chunk and [DONE], or, for a
 * turn that did not complete, one error event and the end of the stream. `write()` is the one
 * place that writes to the response.
 */
export class CompletionStream {
  private ended = false;
  private shutdownSent = false;
  private readonly sse: SseStream;

  constructor(
    res: ServerResponse,
    private readonly meta: CompletionMeta,
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
    this.chunk({ role: "assistant", content: "" }, null);
  }

  /**
   * Whether the client was dropped for not reading its stream (past the buffer bound). Its turn
   * goes on and is saved: the reply can be read from the session the X-Session-Id header named.
   */
  get dropped(): boolean {
    return this.sse.dropped;
  }

  /**
   * The turn's text as it streams. The client keeps all of it: the turn's model calls are
   * append-only (a restarted stream goes on from what was sent, or the turn fails), so nothing
   * sent is ever taken back.
   */
  onEvent(event: AgentEvent): void {
    if (event.type === "text" && event.delta !== "") this.chunk({ content: event.delta }, null);
  }

  /**
   * Told once when the gateway starts to stop: a named `shutdown` event whose data is still a valid
   * chunk (no choices), so OpenAI clients that ignore event names do not break on it.
   */
  shutdown(message: string): void {
    if (this.shutdownSent || this.ended) return;
    this.shutdownSent = true;
    const data = { ...this.base(), choices: [], tenax: { event: "shutdown", message } };
    this.write(`event: shutdown\ndata: ${JSON.stringify(data)}\n\n`);
  }

  finish(result: TurnResult): void {
    if (this.ended) return;
    if (failed(result)) {
      this.fail(turnError(result));
      return;
    }
    const last = {
      ...this.base(result),
      choices: [{ index: 0, delta: {}, finish_reason: finishReason(result), logprobs: null }],
      tenax: tenaxField(result),
    };
    this.write(`data: ${JSON.stringify(last)}\n\n`);
    if (this.includeUsage)
      this.write(
        `data: ${JSON.stringify({ ...this.base(result), choices: [], usage: usageOf(result) })}\n\n`,
      );
    this.end();
  }

  /**
   * A failure after the stream opened: one `data: {"error": ...}` event in the OpenAI shape (the
   * official SDKs raise on it), then the stream ends without a finish reason or [DONE].
   */
  fail(error: HttpError): void {
    if (this.ended) return;
    this.ended = true;
    this.sse.end(`data: ${JSON.stringify(error.toJSON())}\n\n`);
  }

  private end(): void {
    this.ended = true;
    this.sse.end("data: [DONE]\n\n");
  }

  private base(result: TurnResult | null = null) {
    return {
      id: this.meta.id,
      object: "chat.completion.chunk",
      created: this.meta.created,
      model: modelOf(this.meta, result),
    };
  }

  private chunk(delta: Record<string, unknown>, finish: string | null): void {
    this.write(
      `data: ${JSON.stringify({ ...this.base(), choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`,
    );
  }

  private write(text: string): void {
    this.sse.write(text);
  }
}
