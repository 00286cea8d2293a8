// The one small interface every provider client implements: a chat request in, a stream of events out.
// Once started, a stream never throws; it ends with exactly one `done` or one `error` event.
import type { ClassifiedError } from "./classified-error.js";

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text, not yet parsed or checked. */
  arguments: string;
}

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** A JSON Schema for the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  max_output_tokens?: number;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export type ProviderEvent =
  | { type: "text"; delta: string }
  /** Emitted once, complete, after its deltas are assembled. */
  | ({ type: "tool_call" } & ToolCall)
  | ({ type: "usage" } & Usage)
  | {
      type: "done";
      /** The provider's own finish reason, unchanged ("stop", "length", "tool_calls", ...). */
      finish_reason: string;
      text: string;
      tool_calls: ToolCall[];
      usage: Usage | null;
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
