// The client for any OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp)
// through the official SDK with its retries off: streams text, assembles tool calls, reports usage, and
// turns every failure into one classified `error` event.
import type OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type {
  ChatMessage,
  ChatRequest,
  Provider,
  ProviderEvent,
  ToolCall,
  ToolSpec,
  Usage,
} from "../provider.js";
import { type SdkErrors, type SdkProviderOptions, sdkClientOptions, sdkStreamer } from "./sdk-call.js";

export interface OpenAIProviderOptions extends SdkProviderOptions {
  /** Which field carries `max_output_tokens`: OpenAI's newer models want `max_completion_tokens`,
   * most compatible servers only know `max_tokens`. */
  max_tokens_field?: "max_tokens" | "max_completion_tokens";
}

// The SDK is loaded on the first call, not at start: a gateway or CLI that never calls this kind
// of provider never pays for it. Errors are only classified after a call, so it is loaded then.
let sdk: typeof import("openai") | null = null;
const loadSdk = async () => {
  sdk ??= await import("openai");
  return sdk;
};

const OPENAI_ERRORS: SdkErrors = {
  apiError: (error) => (sdk !== null && error instanceof sdk.APIError ? error : null),
  isConnectionError: (error) => sdk !== null && error instanceof sdk.default.APIConnectionError,
  isTimeoutError: (error) => sdk !== null && error instanceof sdk.default.APIConnectionTimeoutError,
  // The SDK keeps only the inner `error` object; the classifier reads the wire shape around it.
  errorBody: (parsed) => ({ error: parsed }),
};

export function createOpenAIProvider(options: OpenAIProviderOptions): Provider {
  const { run, totalMs } = sdkStreamer(options, OPENAI_ERRORS);
  const maxTokensField = options.max_tokens_field ?? "max_tokens";
  return {
    name: options.name,
    stream: (request, call) =>
      run(call, async (fetch, signal) => {
        const { default: OpenAIClient } = await loadSdk();
        const client: OpenAI = new OpenAIClient(
          sdkClientOptions(options.baseURL, call.apiKey, totalMs, fetch),
        );
        const assembly = new Assembly();
        return {
          chunks: await client.chat.completions.create(toParams(request, maxTokensField), { signal }),
          add: (chunk: ChatCompletionChunk) => assembly.add(chunk),
          finish: () => assembly.finish(),
          cutShort: "the stream ended without a finish reason",
        };
      }),
  };
}

function toParams(
  request: ChatRequest,
  maxTokensField: "max_tokens" | "max_completion_tokens",
): ChatCompletionCreateParamsStreaming {
  return {
    model: request.model,
    messages: request.messages.map(toMessage),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools && request.tools.length > 0 ? { tools: request.tools.map(toTool) } : {}),
    ...(request.max_output_tokens === undefined ? {} : { [maxTokensField]: request.max_output_tokens }),
  };
}

function toMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant":
      return {
        role: "assistant",
        content: message.content,
        ...(message.tool_calls && message.tool_calls.length > 0
          ? {
              tool_calls: message.tool_calls.map((c) => ({
                id: c.id,
                type: "function" as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
    case "tool":
      return { role: "tool", content: message.content, tool_call_id: message.tool_call_id };
    default: {
      const unreachable: never = message;
      throw new Error(`unknown message role ${JSON.stringify(unreachable)}`);
    }
  }
}

function toTool(tool: ToolSpec): ChatCompletionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** Turns chunks into events: text as it comes, each tool call once whole, then the final `done`. */
class Assembly {
  private text = "";
  private readonly calls = new Map<number, ToolCall>();
  private emitted = 0;
  private finishReason: string | null = null;
  private usage: Usage | null = null;

  *add(chunk: ChatCompletionChunk): Generator<ProviderEvent> {
    if (chunk.usage) {
      this.usage = { input_tokens: chunk.usage.prompt_tokens, output_tokens: chunk.usage.completion_tokens };
      yield { type: "usage", ...this.usage };
    }
    const choice = chunk.choices[0];
    if (!choice) return;
    const content = choice.delta?.content;
    if (content) {
      this.text += content;
      yield { type: "text", delta: content };
    }
    for (const delta of choice.delta?.tool_calls ?? []) {
      const call = this.calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.name += delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
      this.calls.set(delta.index, call);
    }
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      yield* this.flushCalls();
    }
  }

  /** The `done` event, or null when the stream never said why it finished. */
  finish(): ProviderEvent | null {
    if (this.finishReason === null) return null;
    return {
      type: "done",
      finish_reason: this.finishReason,
      text: this.text,
      tool_calls: this.ordered(),
      usage: this.usage,
    };
  }

  private *flushCalls(): Generator<ProviderEvent> {
    const calls = this.ordered();
    for (const call of calls.slice(this.emitted)) yield { type: "tool_call", ...call };
    this.emitted = calls.length;
  }

  private ordered(): ToolCall[] {
    return [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => ({ ...call }));
  }
}
