// The client for any OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, Ollama, vLLM,
// llama.cpp) on the wire (openai-wire.ts), with the SDK's types: streams text and tool-call
// pieces, assembles tool calls, reports usage and log probabilities, and turns every failure into one classified `error` event.
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { Provider, ProviderEvent, ToolCall, Usage } from "../provider.js";
import { checkTimeouts, DEFAULT_TIMEOUTS } from "../timeouts.js";
import { chatBody, type MaxTokensField } from "./openai-params.js";
import { defaultWireRequest, OPENAI_WIRE_ERRORS, openChatStream, type WireRequest } from "./openai-wire.js";
import { type SdkProviderOptions, sdkStreamer } from "./sdk-call.js";

export interface OpenAIProviderOptions extends Omit<SdkProviderOptions, "fetch"> {
  /** Which field carries `max_output_tokens`: OpenAI's newer models want `max_completion_tokens`,
   * most compatible servers only know `max_tokens`. */
  max_tokens_field?: MaxTokensField;
  /** How a request is sent; undici's request on the shared pool unless injected. */
  request?: WireRequest;
}

export function createOpenAIProvider(options: OpenAIProviderOptions): Provider {
  const { run } = sdkStreamer(options, OPENAI_WIRE_ERRORS);
  const maxTokensField = options.max_tokens_field ?? "max_tokens";
  const connectMs = checkTimeouts({ ...DEFAULT_TIMEOUTS, ...options.timeouts }).connect_ms;
  const request = options.request ?? defaultWireRequest(connectMs);
  return {
    name: options.name,
    stream: (chat, call) =>
      run(
        call,
        async (_fetch, signal, state) => {
          const assembly = new Assembly();
          return {
            chunks: await openChatStream(
              request,
              options.baseURL,
              call.apiKey,
              chatBody(chat, maxTokensField),
              signal,
              state,
            ),
            add: (chunk: ChatCompletionChunk) => assembly.add(chunk),
            finish: () => assembly.finish(),
            cutShort: "the stream ended without a finish reason",
          };
        },
        chat.model,
      ),
  };
}

/**
 * Turns chunks into events: text and tool-call pieces as they come, each tool call once whole,
 * then the final `done`.
 */
class Assembly {
  private text = "";
  private readonly calls = new Map<number, ToolCall>();
  private emitted = 0;
  private finishReason: string | null = null;
  private usage: Usage | null = null;
  private logprobs: unknown[] | null = null;

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
    const logprobs = choice.logprobs?.content;
    if (logprobs && logprobs.length > 0) {
      this.logprobs = [...(this.logprobs ?? []), ...logprobs];
      yield { type: "logprobs", content: logprobs };
    }
    for (const delta of choice.delta?.tool_calls ?? []) {
      const call = this.calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.name += delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
      this.calls.set(delta.index, call);
      yield {
        type: "tool_call_delta",
        index: delta.index,
        ...(delta.id ? { id: delta.id } : {}),
        ...(delta.function?.name ? { name: delta.function.name } : {}),
        arguments: delta.function?.arguments ?? "",
      };
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
      ...(this.logprobs === null ? {} : { logprobs: this.logprobs }),
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
