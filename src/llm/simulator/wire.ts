// The OpenAI Chat Completions wire format as the simulator speaks it: what it reads from a request,
// how it estimates tokens, and the completion, chunk and error objects it sends back.
import { z } from "zod";
import type { SimToolCall } from "./steps.js";

/** The parts of a Chat Completions request the simulator reads; anything else passes through. */
export const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown().optional() })),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: z.number().int().nullish(),
  max_completion_tokens: z.number().int().nullish(),
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z
    .union([
      z.enum(["none", "auto", "required"]),
      z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string() }) }),
    ])
    .nullish(),
  response_format: z
    .discriminatedUnion("type", [
      z.looseObject({ type: z.literal("text") }),
      z.looseObject({ type: z.literal("json_object") }),
      z.looseObject({
        type: z.literal("json_schema"),
        json_schema: z.looseObject({
          name: z.string(),
          schema: z.record(z.string(), z.unknown()).nullish(),
          strict: z.boolean().nullish(),
        }),
      }),
    ])
    .nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  logprobs: z.boolean().nullish(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The simulator's token estimate: a quarter of the characters, rounded up. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Characters of a message's content, whether a string or a list of parts. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => {
      if (typeof part !== "object" || part === null) return "";
      const text = (part as { text?: unknown }).text;
      return typeof text === "string" ? text : "";
    })
    .join("");
}

/** Estimated prompt tokens: message text, tool calls in the history, and tool definitions. */
export function promptTokens(request: ChatRequest): number {
  let chars = 0;
  for (const message of request.messages) {
    chars += contentText(message.content).length;
    if (Array.isArray(message.tool_calls)) chars += JSON.stringify(message.tool_calls).length;
  }
  if (request.tools) chars += JSON.stringify(request.tools).length;
  return estimateTokens(chars);
}

/** The deterministic default answer: the last user message, echoed. */
export function defaultReplyText(request: ChatRequest): string {
  const lastUser = request.messages.findLast((message) => message.role === "user");
  return `echo: ${lastUser ? contentText(lastUser.content) : ""}`;
}

export function usageFor(prompt: number, completionChars: number): Usage {
  const completion = estimateTokens(completionChars);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export function toWireToolCalls(calls: SimToolCall[], idPrefix: string): WireToolCall[] {
  return calls.map((call, i) => ({
    id: call.id ?? `call_${idPrefix}_${i}`,
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
}

export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

/**
 * Made-up but well-formed log probabilities for a piece of text, one token per piece: enough for a
 * client (and a test) to see them arrive where OpenAI puts them.
 */
export function logprobsFor(pieceTexts: string[]): { content: unknown[]; refusal: null } {
  return {
    content: pieceTexts.map((token) => ({
      token,
      logprob: -0.25,
      bytes: [...Buffer.from(token, "utf8")],
      top_logprobs: [],
    })),
    refusal: null,
  };
}

export function completionObject(
  meta: CompletionMeta,
  message: { content: string | null; tool_calls?: WireToolCall[] },
  finishReason: string,
  usage: Usage,
  logprobs: { content: unknown[]; refusal: null } | null = null,
): Record<string, unknown> {
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", refusal: null, ...message },
        logprobs,
        finish_reason: finishReason,
      },
    ],
    usage,
    system_fingerprint: "fp_tenax_sim",
  };
}

/**
 * The chunks of a streamed answer in order: the role, the text in pieces, each tool call's header
 * and argument pieces, the finish reason, and the usage chunk when the request asked for it.
 */
export function streamChunks(
  meta: CompletionMeta,
  answer: { text: string; toolCalls: WireToolCall[]; finishReason: string; usage: Usage },
  options: { chunkSize: number; includeUsage: boolean; logprobs?: boolean },
): Record<string, unknown>[] {
  const chunk = (
    delta: Record<string, unknown>,
    finishReason: string | null = null,
    logprobs: unknown = null,
  ): Record<string, unknown> => ({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    system_fingerprint: "fp_tenax_sim",
    choices: [{ index: 0, delta, logprobs, finish_reason: finishReason }],
    ...(options.includeUsage ? { usage: null } : {}),
  });
  const chunks: Record<string, unknown>[] = [chunk({ role: "assistant", content: "", refusal: null })];
  for (const piece of pieces(answer.text, options.chunkSize))
    chunks.push(chunk({ content: piece }, null, options.logprobs ? logprobsFor([piece]) : null));
  answer.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
        ],
      }),
    );
    for (const piece of pieces(call.function.arguments, options.chunkSize)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, answer.finishReason));
  if (options.includeUsage) {
    chunks.push({
      id: meta.id,
      object: "chat.completion.chunk",
      created: meta.created,
      model: meta.model,
      system_fingerprint: "fp_tenax_sim",
      choices: [],
      usage: answer.usage,
    });
  }
  return chunks;
}

export function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** An OpenAI-style error document. */
export function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): { error: { message: string; type: string; param: string | null; code: string | null } } {
  return { error: { message, type, param, code } };
}

/** The error type OpenAI uses for a status, for default error bodies. */
export function errorTypeForStatus(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}
