// The one small interface every provider client implements: a chat request in, a stream of events out.
// Once started, a stream never throws; it ends with exactly one `done` or one `error` event.
import type { ClassifiedError } from "./classified-error.js";

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text, not yet parsed or checked. */
  arguments: string;
}

/** A piece of a user message: text, or an image by URL (`https:` or a `data:` URL with base64). */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image"; url: string; detail?: "auto" | "low" | "high" };

/**
 * Reasoning a model gave with an earlier reply, replayed as it came (Anthropic's extended thinking):
 * the provider checks its signature, so it is never changed, only sent whole or left out.
 */
export type ThinkingBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[]; thinking?: ThinkingBlock[] }
  | { role: "tool"; content: string; tool_call_id: string };

/** The text of a message's content; images count for nothing. */
export function contentText(content: string | ContentPart[] | null): string {
  if (content === null) return "";
  if (typeof content === "string") return content;
  let text = "";
  for (const part of content) if (part.type === "text") text += part.text;
  return text;
}

export interface ToolSpec {
  name: string;
  /** Left out of the wire when absent (a client's tool may have none). */
  description?: string;
  /** A JSON Schema for the arguments object. */
  parameters: Record<string, unknown>;
  /** OpenAI's strict schema adherence, forwarded where the wire has it. */
  strict?: boolean;
}

/** Which tool the model must call: its own choice, none, any, or the one named. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** The shape the reply must take: free text, any JSON object, or JSON matching a schema. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      name: string;
      schema?: Record<string, unknown>;
      description?: string;
      strict?: boolean;
    };

/**
 * How the model samples and where it stops: the same for every caller (the model gateway passes
 * the client's; an agent turn may pass its configured ones). A field left out is the provider's.
 */
export interface SamplingParams {
  temperature?: number;
  top_p?: number;
  /** Lowers the chance of a token by how often it appeared so far (-2 to 2); the OpenAI wire only. */
  frequency_penalty?: number;
  /** Lowers the chance of any token that appeared so far (-2 to 2); the OpenAI wire only. */
  presence_penalty?: number;
  /** Sequences that end the reply where they would appear (not included in it). */
  stop?: string[];
  seed?: number;
  /** An end-user id for the provider's abuse tracking. */
  user?: string;
  logprobs?: boolean;
  top_logprobs?: number;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
  response_format?: ResponseFormat;
  max_output_tokens?: number;
  params?: SamplingParams;
  /**
   * Fields the caller sent that Tenax does not know, sent as they are on the OpenAI wire (never
   * over a known field) and left out on wires they mean nothing to.
   */
  extra?: Record<string, unknown>;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export type ProviderEvent =
  | { type: "text"; delta: string }
  /**
   * A piece of a tool call as it streams: `index` is its place among this reply's calls (0, 1,
   * ...); the first piece of a call carries its id and name, later ones more of its arguments.
   */
  | { type: "tool_call_delta"; index: number; id?: string; name?: string; arguments: string }
  /** Emitted once, complete, after its deltas are assembled. */
  | ({ type: "tool_call" } & ToolCall)
  /** Log probabilities of the tokens just streamed, as the provider sent them (OpenAI's shape). */
  | { type: "logprobs"; content: unknown[] }
  | ({ type: "usage" } & Usage)
  | {
      type: "done";
      /** The provider's own finish reason, unchanged ("stop", "length", "tool_calls", ...). */
      finish_reason: string;
      text: string;
      tool_calls: ToolCall[];
      usage: Usage | null;
      /** Every token's log probabilities, when asked for and the provider gave them. */
      logprobs?: unknown[];
    }
  | { type: "error"; error: ClassifiedError };

export interface StreamOptions {
  apiKey: string;
  /** The caller's signal; when it fires the stream ends with an `aborted` error. */
  signal?: AbortSignal;
}

export interface Provider {
  readonly name: string;
  /** Never throws once started: every failure becomes the final `error` event. */
  stream(request: ChatRequest, options: StreamOptions): AsyncIterable<ProviderEvent>;
}
