// What a model call answers on the OpenAI wire: the chat.completion object, the finish reason in
// OpenAI's words (a Messages provider says end_turn, tool_use, max_tokens), and usage.
import type { Completion } from "../llm/model-call.js";
import type { ToolCall, Usage } from "../llm/provider.js";

export interface AnswerMeta {
  id: string;
  created: number;
  sessionId: string;
}

const FINISH: Readonly<Record<string, string>> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "content_filter",
  function_call: "function_call",
  end_turn: "stop",
  stop_sequence: "stop",
  pause_turn: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
};

/** OpenAI's finish reason for the provider's own; one it does not know reads as `stop`. */
export function openAIFinishReason(reason: string): string {
  return FINISH[reason] ?? "stop";
}

export function wireToolCalls(calls: readonly ToolCall[]) {
  return calls.map((c) => ({
    id: c.id,
    type: "function" as const,
    function: { name: c.name, arguments: c.arguments },
  }));
}

export function wireUsage(usage: Usage | null) {
  const input = usage?.input_tokens ?? 0;
  const output = usage?.output_tokens ?? 0;
  return { prompt_tokens: input, completion_tokens: output, total_tokens: input + output };
}

/** What Tenax adds to an answer: the session it is stored in, who answered, after how many tries. */
export function tenaxPart(meta: AnswerMeta, completion: Completion, fellBack: boolean) {
  return {
    session_id: meta.sessionId,
    provider: completion.provider,
    model: completion.model,
    attempts: completion.attempts,
    fell_back: fellBack,
  };
}

export function completionObject(meta: AnswerMeta, completion: Completion, fellBack: boolean) {
  const calls = completion.tool_calls;
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: `${completion.provider}/${completion.model}`,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          // OpenAI's own answer to a tool call has null content when the model said nothing.
          content: completion.text === "" && calls.length > 0 ? null : completion.text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: wireToolCalls(calls) } : {}),
        },
        finish_reason: openAIFinishReason(completion.finish_reason),
        logprobs: completion.logprobs ? { content: completion.logprobs, refusal: null } : null,
      },
    ],
    usage: wireUsage(completion.usage),
    tenax: tenaxPart(meta, completion, fellBack),
  };
}
