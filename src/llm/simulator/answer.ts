// Writing a chat completion's answer on the raw response, as a provider sends it: whole or as SSE
// chunks at a scripted pace (cut where the request's stop sequences and output cap say), or started
// and then hung, cut off or broken on cue.
import type { Sleep } from "../../core/deps.js";
import { sendJson, waitUntilClosed } from "./respond.js";
import { limited } from "./shape.js";
import type { Exchange } from "./state.js";
import {
  type ChatRequest,
  type CompletionMeta,
  completionObject,
  defaultReplyText,
  logprobsFor,
  pieces,
  streamChunks,
  type Usage,
  usageFor,
  type WireToolCall,
} from "./wire.js";

const DEFAULT_CHUNK_SIZE = 8;
const DEFAULT_MALFORMED_CHUNK = '{"id":"chatcmpl-sim","object":"chat.completion.chunk","choices":[{';

export interface Answer {
  text: string;
  toolCalls: WireToolCall[];
  finishReason: string;
  usage: Usage;
}

export interface Pacing {
  chunkSize?: number | undefined;
  delayMs?: number | undefined;
}

export function replyAnswer(text: string, finishReason: string, prompt: number): Answer {
  return { text, toolCalls: [], finishReason, usage: usageFor(prompt, text.length) };
}

export async function answer(
  exchange: Exchange,
  request: ChatRequest,
  meta: CompletionMeta,
  given: Answer,
  sleep: Sleep,
  pacing: Pacing = {},
): Promise<void> {
  const { res } = exchange;
  const result = limited(given, request);
  if (!request.stream) {
    const message = {
      content: result.text.length > 0 || result.toolCalls.length === 0 ? result.text : null,
      ...(result.toolCalls.length > 0 ? { tool_calls: result.toolCalls } : {}),
    };
    const logprobs =
      request.logprobs === true && result.text !== ""
        ? logprobsFor(pieces(result.text, pacing.chunkSize ?? DEFAULT_CHUNK_SIZE))
        : null;
    return sendJson(res, 200, completionObject(meta, message, result.finishReason, result.usage, logprobs), {
      "x-request-id": `req_sim_${exchange.record.seq}`,
    });
  }
  const chunks = streamChunks(meta, result, {
    chunkSize: pacing.chunkSize ?? DEFAULT_CHUNK_SIZE,
    includeUsage: request.stream_options?.include_usage === true,
    logprobs: request.logprobs === true,
  });
  startSse(exchange);
  for (const [i, chunk] of chunks.entries()) {
    if (i > 0 && pacing.delayMs) {
      const slept = await sleep(pacing.delayMs, exchange.closed).then(
        () => true,
        () => false,
      );
      if (!slept) return;
    }
    if (exchange.closed.aborted) return;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.end("data: [DONE]\n\n");
}

/**
 * Start an answer (`result`, or the default echo), then hang, drop the socket, or send a broken
 * chunk.
 */
export async function interrupt(
  exchange: Exchange,
  request: ChatRequest,
  meta: CompletionMeta,
  prompt: number,
  afterChunks: number,
  how: "hang" | "drop" | "malformed",
  options: { raw?: string | undefined; result?: Answer | undefined } = {},
): Promise<void> {
  const { res, record } = exchange;
  const result = options.result ?? replyAnswer(defaultReplyText(request), "stop", prompt);
  const raw = options.raw;
  if (request.stream) {
    const chunks = streamChunks(meta, result, {
      chunkSize: DEFAULT_CHUNK_SIZE,
      includeUsage: request.stream_options?.include_usage === true,
    });
    startSse(exchange);
    for (const chunk of chunks.slice(0, afterChunks)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    if (how === "malformed") {
      res.end(`data: ${raw ?? DEFAULT_MALFORMED_CHUNK}\n\n`);
      return;
    }
  } else {
    // Without a stream there are no chunks: send the headers and the first half of the body.
    const message = {
      content: result.text,
      ...(result.toolCalls.length > 0 ? { tool_calls: result.toolCalls } : {}),
    };
    const body = JSON.stringify(completionObject(meta, message, result.finishReason, result.usage));
    res.writeHead(200, { "content-type": "application/json" });
    res.write(body.slice(0, Math.floor(body.length / 2)));
  }
  if (how === "hang") return waitUntilClosed(exchange.closed);
  record.ended = "dropped";
  // Flush what was written, then cut the connection without ending the response.
  await new Promise<void>((resolve) => res.write("", () => resolve()));
  res.destroy();
}

function startSse(exchange: Exchange): void {
  exchange.res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-request-id": `req_sim_${exchange.record.seq}`,
  });
  exchange.res.flushHeaders();
}
