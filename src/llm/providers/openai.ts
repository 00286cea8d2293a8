// The client for any OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp)
// through the official SDK with its retries off: streams text, assembles tool calls, reports usage, and
// turns every failure into one classified `error` event.
import OpenAI, { APIError } from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { type Clock, systemClock } from "../../core/deps.js";
import type { ClassifiedError, ProviderFailure } from "../classified-error.js";
import { classify } from "../classify.js";
import type {
  ChatMessage,
  ChatRequest,
  Provider,
  ProviderEvent,
  StreamOptions,
  ToolCall,
  ToolSpec,
  Usage,
} from "../provider.js";
import {
  checkTimeouts,
  DEFAULT_TIMEOUTS,
  type RequestTimers,
  realTimers,
  startRequestTimers,
  type Timeouts,
  type TimerDeps,
} from "../timeouts.js";

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface OpenAIProviderOptions {
  name: string;
  baseURL: string;
  timeouts?: Partial<Timeouts>;
  /** Which field carries `max_output_tokens`: OpenAI's newer models want `max_completion_tokens`,
   * most compatible servers only know `max_tokens`. */
  max_tokens_field?: "max_tokens" | "max_completion_tokens";
  fetch?: Fetch;
  clock?: Clock;
  timers?: TimerDeps;
}

type Phase = NonNullable<ProviderFailure["phase"]>;

/** What one call knows when it fails: how far it got and what it captured on the way. */
interface CallState {
  timers: RequestTimers;
  callerSignal: AbortSignal | undefined;
  headersSeen: boolean;
  /** The raw text of an error response, read before the SDK parses it. */
  errorText: string | null;
}

export function createOpenAIProvider(options: OpenAIProviderOptions): Provider {
  const timeouts = checkTimeouts({ ...DEFAULT_TIMEOUTS, ...options.timeouts });
  const baseFetch: Fetch = options.fetch ?? ((input, init) => fetch(input, init));
  const clock = options.clock ?? systemClock;
  const timerDeps = options.timers ?? realTimers;
  const maxTokensField = options.max_tokens_field ?? "max_tokens";

  async function* stream(request: ChatRequest, call: StreamOptions): AsyncGenerator<ProviderEvent> {
    const state: CallState = {
      timers: startRequestTimers(timeouts, timerDeps),
      callerSignal: call.signal,
      headersSeen: false,
      errorText: null,
    };
    const signal = call.signal ? AbortSignal.any([call.signal, state.timers.signal]) : state.timers.signal;
    let last: ProviderEvent | null = null;
    try {
      if (signal.aborted) throw signal.reason;
      const client = new OpenAI({
        baseURL: options.baseURL,
        apiKey: call.apiKey,
        maxRetries: 0,
        timeout: timeouts.total_ms,
        logLevel: "off",
        fetch: watchedFetch(baseFetch, state),
      });
      const chunks = await client.chat.completions.create(toParams(request, maxTokensField), { signal });
      const assembly = new Assembly();
      for await (const chunk of chunks) {
        for (const event of assembly.add(chunk)) yield event;
      }
      // The SDK ends an aborted stream quietly: an abort of ours or the caller's is still a failure.
      if (signal.aborted) throw signal.reason;
      last = assembly.finish() ?? {
        type: "error",
        error: failed(state, {
          name: "StreamEndedError",
          message: "the stream ended without a finish reason",
        }),
      };
    } catch (error) {
      last = { type: "error", error: classifyThrown(error, state, clock.now()) };
    } finally {
      // Runs on every exit, including a consumer that stops early: no timer or socket outlives the call.
      state.timers.release();
    }
    yield last;
  }

  return { name: options.name, stream };
}

/** Wraps fetch to see the moment headers arrive, every piece of the body, and an error's raw text. */
function watchedFetch(base: Fetch, state: CallState): Fetch {
  return async (input, init) => {
    const response = await base(input, init);
    state.headersSeen = true;
    state.timers.headers();
    if (!response.ok) {
      state.errorText = await response.text();
      return new Response(state.errorText, response);
    }
    if (response.body === null) return response;
    const watched = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(piece, controller) {
          state.timers.activity();
          controller.enqueue(piece);
        },
      }),
    );
    return new Response(watched, response);
  };
}

function classifyThrown(error: unknown, state: CallState, now: number): ClassifiedError {
  const phase: Phase = state.headersSeen ? "stream" : "headers";
  const fired = state.timers.fired();
  if (fired !== null) {
    // Our own deadline: a timeout before the headers, a dropped stream after them.
    return classify(
      {
        status: null,
        headers: {},
        body: null,
        transport: {
          name: "TimeoutError",
          code: "ETIMEDOUT",
          message: `no ${fired === "idle" ? "chunk" : "answer"} within the ${fired} limit of ${state.timers.limit(fired)} ms`,
        },
        phase: fired === "idle" ? "stream" : phase,
      },
      now,
    );
  }
  if (state.callerSignal?.aborted) {
    return classify({ status: null, headers: {}, body: null, aborted: true, phase }, now);
  }
  if (error instanceof APIError && typeof error.status === "number") {
    return classify(
      {
        status: error.status,
        headers: headerRecord(error.headers),
        body: state.errorText ?? (error.error === undefined ? null : { error: error.error }),
        phase: "headers",
      },
      now,
    );
  }
  if (error instanceof APIError && error.error !== undefined) {
    // An error event inside a 200 stream (OpenRouter does this): the body carries the real reason.
    return classify(
      { status: null, headers: headerRecord(error.headers), body: { error: error.error }, phase },
      now,
    );
  }
  const transport = describeTransport(error);
  const connect = error instanceof OpenAI.APIConnectionError && !state.headersSeen;
  const timedOut = error instanceof OpenAI.APIConnectionTimeoutError;
  return classify(
    {
      status: null,
      headers: {},
      body: null,
      transport: timedOut ? { ...transport, name: "TimeoutError", code: "ETIMEDOUT" } : transport,
      phase: connect && !timedOut ? "connect" : phase,
    },
    now,
  );
}

function failed(state: CallState, transport: { name: string; message: string }): ClassifiedError {
  return classify({
    status: null,
    headers: {},
    body: null,
    transport,
    phase: state.headersSeen ? "stream" : "headers",
  });
}

/** The innermost useful name, code and message along an error's cause chain (undici nests them). */
function describeTransport(error: unknown): { name: string; code?: string; message: string } {
  let name = "Error";
  let code: string | undefined;
  let message = String(error);
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const record = current as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
    if (typeof record.name === "string" && depth === 0) name = record.name;
    if (typeof record.message === "string" && record.message !== "") message = record.message;
    if (typeof record.code === "string") {
      code = record.code;
      if (typeof record.name === "string") name = record.name;
    }
    current = record.cause;
  }
  return code === undefined ? { name, message } : { name, code, message };
}

function headerRecord(headers: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  headers?.forEach((value, key) => {
    out[key] = value;
  });
  return out;
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
