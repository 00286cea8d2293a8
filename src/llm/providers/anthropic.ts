// The client for Anthropic's Messages API through the official SDK with its retries off: translates our
// OpenAI-style history into Messages, streams text, assembles tool use, reports usage, and turns every
// failure into one classified `error` event.
import type Anthropic from "@anthropic-ai/sdk";
import type {
  ChatMessage,
  ChatRequest,
  ContentPart,
  Provider,
  ProviderEvent,
  ResponseFormat,
  ToolCall,
  ToolChoice,
  ToolSpec,
  Usage,
} from "../provider.js";
import { type SdkErrors, type SdkProviderOptions, sdkClientOptions, sdkStreamer } from "./sdk-call.js";

type MessageParam = Anthropic.MessageParam;
type StreamParams = Anthropic.MessageCreateParamsStreaming;
type StreamEvent = Anthropic.RawMessageStreamEvent;
type ContentBlockParam = Anthropic.ContentBlockParam;
type ToolResultBlockParam = Anthropic.ToolResultBlockParam;

/** The Messages API requires an output budget on every request; this one applies when nobody set one. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

export interface AnthropicProviderOptions extends SdkProviderOptions {
  /** Used when a request has no `max_output_tokens`. */
  default_max_tokens?: number;
}

// The SDK is loaded on the first call, not at start (it is the slowest module Tenax imports):
// errors are only classified after a call, so it is loaded by then.
let sdk: typeof import("@anthropic-ai/sdk") | null = null;
const loadSdk = async () => {
  sdk ??= await import("@anthropic-ai/sdk");
  return sdk;
};

const ANTHROPIC_ERRORS: SdkErrors = {
  apiError: (error) => (sdk !== null && error instanceof sdk.APIError ? error : null),
  isConnectionError: (error) => sdk !== null && error instanceof sdk.default.APIConnectionError,
  isTimeoutError: (error) => sdk !== null && error instanceof sdk.default.APIConnectionTimeoutError,
  // The SDK keeps Anthropic's whole `{type: "error", error: {...}}` object: read it as it is.
  errorBody: (parsed) => parsed,
};

/** `baseURL` is the API root without /v1 (the SDK appends /v1/messages), e.g. https://api.anthropic.com. */
export function createAnthropicProvider(options: AnthropicProviderOptions): Provider {
  const defaultMaxTokens = options.default_max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS;
  if (!Number.isInteger(defaultMaxTokens) || defaultMaxTokens <= 0) {
    throw new RangeError(`default_max_tokens must be a positive whole number, got ${defaultMaxTokens}`);
  }
  const { run, totalMs } = sdkStreamer(options, ANTHROPIC_ERRORS);
  return {
    name: options.name,
    stream: (request, call) =>
      run(
        call,
        async (fetch, signal) => {
          const { default: AnthropicClient } = await loadSdk();
          const client: Anthropic = new AnthropicClient(
            sdkClientOptions(options.baseURL, call.apiKey, totalMs, fetch),
          );
          const assembly = new Assembly();
          // The key travels as the official SDK sends it (its version's auth header and API version).
          return {
            chunks: await client.messages.create(toParams(request, defaultMaxTokens), { signal }),
            add: (event: StreamEvent) => assembly.add(event),
            finish: () => assembly.finish(),
            cutShort: "the stream ended before message_stop",
          };
        },
        request.model,
      ),
  };
}

// --- Translation: our OpenAI-style history to the Messages API. ---

/**
 * The Messages API has no seed, no penalties, no log probabilities and no JSON mode that every
 * model takes: seed, frequency_penalty, presence_penalty and logprobs are not sent, `extra`
 * (OpenAI-wire fields) is not either, and a response_format becomes an instruction in the system
 * prompt (asked for, not enforced).
 */
function toParams(request: ChatRequest, defaultMaxTokens: number): StreamParams {
  const system = request.messages.flatMap((m) => (m.role === "system" ? [m.content] : []));
  const format = request.response_format ? formatInstruction(request.response_format) : null;
  if (format !== null) system.push(format);
  const p = request.params ?? {};
  const tools = request.tools && request.tools.length > 0 ? request.tools.map(toTool) : null;
  const choice = tools ? toToolChoice(request.tool_choice, request.parallel_tool_calls) : null;
  return {
    model: request.model,
    max_tokens: request.max_output_tokens ?? defaultMaxTokens,
    messages: toMessages(request.messages),
    stream: true,
    ...(system.length > 0 ? { system: system.join("\n\n") } : {}),
    ...(tools ? { tools } : {}),
    ...(choice ? { tool_choice: choice } : {}),
    ...(p.stop && p.stop.length > 0 ? { stop_sequences: p.stop } : {}),
    ...(p.temperature === undefined ? {} : { temperature: p.temperature }),
    ...(p.top_p === undefined ? {} : { top_p: p.top_p }),
    ...(p.user === undefined ? {} : { metadata: { user_id: p.user } }),
  };
}

/** What the system prompt asks for in place of OpenAI's response_format. */
export function formatInstruction(format: ResponseFormat): string | null {
  switch (format.type) {
    case "text":
      return null;
    case "json_object":
      return "Answer with a single JSON object and nothing else: no prose, no code fences.";
    case "json_schema":
      return `Answer with a single JSON value and nothing else (no prose, no code fences) that matches this JSON Schema${
        format.description ? ` (${format.description})` : ""
      }: ${JSON.stringify(format.schema ?? {})}`;
    default: {
      const unreachable: never = format;
      throw new Error(`unknown response format ${JSON.stringify(unreachable)}`);
    }
  }
}

/** OpenAI's tool_choice and parallel_tool_calls as one Messages tool_choice; null for the default. */
function toToolChoice(
  choice: ToolChoice | undefined,
  parallel: boolean | undefined,
): Anthropic.ToolChoice | null {
  const serial = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return parallel === false ? { type: "auto", ...serial } : null;
  if (choice === "none") return { type: "none" };
  if (choice === "auto") return { type: "auto", ...serial };
  if (choice === "required") return { type: "any", ...serial };
  return { type: "tool", name: choice.name, ...serial };
}

function toContent(content: string | ContentPart[]): string | ContentBlockParam[] {
  if (typeof content === "string") return content;
  return content.map((part): ContentBlockParam => {
    if (part.type === "text") return { type: "text", text: part.text };
    const data = /^data:([^;,]+);base64,(.*)$/s.exec(part.url);
    if (!data) return { type: "image", source: { type: "url", url: part.url } };
    return {
      type: "image",
      source: {
        type: "base64",
        // The API names the types it takes (jpeg, png, gif, webp) and refuses the others itself.
        media_type: data[1] as Anthropic.Base64ImageSource["media_type"],
        data: data[2] ?? "",
      },
    };
  });
}

/**
 * System messages leave the list (they go to `system`); assistant tool calls become `tool_use` blocks; tool
 * results become `tool_result` blocks of one user message, since the API wants every result of a turn
 * together right after the assistant's `tool_use`.
 */
function toMessages(messages: ChatMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  let results: ToolResultBlockParam[] | null = null;
  for (const message of messages) {
    if (message.role !== "tool") results = null;
    switch (message.role) {
      case "system":
        break;
      case "user":
        out.push({ role: "user", content: toContent(message.content) });
        break;
      case "assistant": {
        // Replayed thinking goes first, as the API returned it; the Messages API alone takes it.
        const blocks: ContentBlockParam[] = [...(message.thinking ?? [])];
        if (message.content) blocks.push({ type: "text", text: message.content });
        for (const call of message.tool_calls ?? []) {
          blocks.push({ type: "tool_use", id: call.id, name: call.name, input: toolInput(call.arguments) });
        }
        // An empty assistant turn is refused by the API and says nothing: leave it out.
        if (blocks.length > 0) out.push({ role: "assistant", content: blocks });
        break;
      }
      case "tool": {
        const block: ToolResultBlockParam = {
          type: "tool_result",
          tool_use_id: message.tool_call_id,
          content: message.content,
        };
        if (results) {
          results.push(block);
          break;
        }
        results = [block];
        out.push({ role: "user", content: results });
        break;
      }
      default: {
        const unreachable: never = message;
        throw new Error(`unknown message role ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return out;
}

/** The API takes tool input as an object; arguments the model garbled are replayed as an empty one. */
function toolInput(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  return {};
}

function toTool(tool: ToolSpec): Anthropic.Tool {
  return {
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    // Our specs are JSON Schema for an object, which is what the API asks for.
    input_schema: { type: "object", ...tool.parameters },
  };
}

// --- Assembly: stream events to provider events. ---

interface OpenBlock {
  call: ToolCall;
  /** Its place among this reply's tool calls (not among all its blocks). */
  index: number;
  /** Whether any input_json_delta arrived; without one, the start's `input` is the whole input. */
  streamed: boolean;
}

/** Turns stream events into ours: text as it comes, each tool use once its block stops, then `done`. */
class Assembly {
  private text = "";
  private readonly open = new Map<number, OpenBlock>();
  private readonly calls: ToolCall[] = [];
  private toolBlocks = 0;
  private inputTokens = 0;
  private usage: Usage | null = null;
  private stopReason: string | null = null;
  private stopped = false;

  *add(event: StreamEvent): Generator<ProviderEvent> {
    switch (event.type) {
      case "message_start":
        this.inputTokens = event.message.usage.input_tokens;
        return;
      case "content_block_start": {
        const block = event.content_block;
        if (block.type !== "tool_use") return;
        const input = JSON.stringify(block.input ?? {});
        const index = this.toolBlocks++;
        this.open.set(event.index, {
          call: { id: block.id, name: block.name, arguments: input },
          index,
          streamed: false,
        });
        yield { type: "tool_call_delta", index, id: block.id, name: block.name, arguments: "" };
        return;
      }
      case "content_block_delta": {
        const delta = event.delta;
        if (delta.type === "text_delta") {
          this.text += delta.text;
          yield { type: "text", delta: delta.text };
          return;
        }
        if (delta.type !== "input_json_delta") return;
        const block = this.open.get(event.index);
        if (!block) return;
        if (!block.streamed) block.call.arguments = "";
        block.streamed = true;
        block.call.arguments += delta.partial_json;
        if (delta.partial_json !== "")
          yield { type: "tool_call_delta", index: block.index, arguments: delta.partial_json };
        return;
      }
      case "content_block_stop": {
        const block = this.open.get(event.index);
        if (!block) return;
        this.open.delete(event.index);
        // Input that came whole with the block's start still reaches a listener of pieces.
        if (!block.streamed)
          yield { type: "tool_call_delta", index: block.index, arguments: block.call.arguments };
        this.calls.push(block.call);
        yield { type: "tool_call", ...block.call };
        return;
      }
      case "message_delta": {
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        // message_delta's usage is cumulative; input tokens were counted at message_start.
        const input = event.usage.input_tokens ?? this.inputTokens;
        this.usage = { input_tokens: input, output_tokens: event.usage.output_tokens };
        yield { type: "usage", ...this.usage };
        return;
      }
      case "message_stop":
        this.stopped = true;
        return;
      default:
        // Thinking, citations and event types newer than this client carry nothing we report.
        return;
    }
  }

  /** The `done` event, or null when the stream never reached message_stop with a stop reason. */
  finish(): ProviderEvent | null {
    if (!this.stopped || this.stopReason === null) return null;
    return {
      type: "done",
      finish_reason: this.stopReason,
      text: this.text,
      tool_calls: this.calls.map((c) => ({ ...c })),
      usage: this.usage,
    };
  }
}
