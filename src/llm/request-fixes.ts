// Failures that the same request meets again on any key or after any wait, but that one change to the
// request clears: per reason, that change as data. The router sends the changed request once more to
// the same model; whether a failure is worth this, and what follows when the change is not possible
// or does not help, stay the reason's flags (classify-rules.ts). The change is made to the request
// sent, never to what the caller keeps (a session's stored history is untouched).
import { type ErrorReason, ProviderError } from "./classified-error.js";
import type { ChatMessage, ChatRequest } from "./provider.js";

type Request = Omit<ChatRequest, "model">;

export interface RequestFix {
  /** What the change does, for the event that says it is made. */
  does: string;
  /** The request changed; null when there is nothing to change, so the fix cannot help. */
  apply(request: Request): Request | null;
  /** What a failure of the same reason means once the changed request failed too. */
  still: string;
}

/**
 * Where an OpenAI-wire request turns reasoning off, as each provider documents it: the top-level
 * field (sent as it came, in `extra`), the field inside it when it is an object, and the values that
 * mean "off". Removing that field leaves reasoning as the model's default: on, for a model that
 * always reasons.
 */
export const REASONING_OFF: readonly { field: string; inner?: string; off: readonly unknown[] }[] = [
  { field: "reasoning_effort", off: ["none"] }, // OpenAI
  { field: "reasoning", inner: "enabled", off: [false] }, // OpenRouter
  { field: "reasoning", inner: "effort", off: ["none"] }, // OpenRouter
  { field: "thinking", inner: "type", off: ["disabled"] }, // DeepSeek, GLM, Kimi
  { field: "enable_thinking", off: [false] }, // Qwen (DashScope)
  { field: "chat_template_kwargs", inner: "enable_thinking", off: [false] }, // vLLM, SGLang
  { field: "think", off: [false] }, // Ollama
];

/** The request with every field that turned reasoning off taken out; null when none did. */
export function withReasoningLeftOn(request: Request): Request | null {
  if (request.extra === undefined) return null;
  const extra: Record<string, unknown> = { ...request.extra };
  let changed = false;
  for (const { field, inner, off } of REASONING_OFF) {
    const value = extra[field];
    if (inner === undefined) {
      if (off.includes(value)) {
        delete extra[field];
        changed = true;
      }
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) continue;
    const object = value as Record<string, unknown>;
    if (!off.includes(object[inner])) continue;
    const { [inner]: _off, ...rest } = object;
    if (Object.keys(rest).length === 0) delete extra[field];
    else extra[field] = rest;
    changed = true;
  }
  if (!changed) return null;
  const { extra: _old, ...without } = request;
  return Object.keys(extra).length === 0 ? without : { ...without, extra };
}

/** The request without the thinking blocks replayed on its assistant messages; null when it had none. */
export function withoutThinking(request: Request): Request | null {
  let stripped = 0;
  const messages = request.messages.map((message): ChatMessage => {
    if (message.role !== "assistant" || message.thinking === undefined) return message;
    stripped += message.thinking.length;
    const { thinking: _blocks, ...rest } = message;
    return rest;
  });
  return stripped === 0 ? null : { ...request, messages };
}

export const REQUEST_FIXES: Readonly<Partial<Record<ErrorReason, RequestFix>>> = {
  // A model that always reasons refuses a request that turned reasoning off: left on, it answers.
  reasoning_mandatory: {
    does: "sending it again with reasoning left on (the field that turned it off removed)",
    apply: withReasoningLeftOn,
    still: "the model refused the request even with reasoning left on",
  },
  // The signature of replayed thinking did not verify (another key, model or proxy made it, or it was
  // changed): the model can answer without its earlier thinking, so it is left out of this request.
  thinking_signature: {
    does: "sending it again without the thinking blocks replayed from earlier replies",
    apply: withoutThinking,
    still:
      "the provider refused the request again once the replayed thinking was left out; start a new session",
  },
};

/** Told when a fix is made, before the changed request is sent. */
export type OnFix = (fix: RequestFix, failure: ProviderError) => void;

/**
 * Calls `call` with the request; on a failure whose reason has a fix that applies, says so and calls
 * it once more with the changed request. A second failure of the same reason says what was tried in
 * its message; any other failure, or a fix that cannot apply, is passed on as it is, so the reason's
 * flags decide what follows (fall back, or give up).
 */
export async function withRequestFix<T>(
  request: Request,
  call: (request: Request) => Promise<T>,
  onFix: OnFix,
): Promise<T> {
  let fix: RequestFix | undefined;
  let fixed: Request | null = null;
  try {
    return await call(request);
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    fix = REQUEST_FIXES[error.classified.reason];
    fixed = fix?.apply(request) ?? null;
    if (fix === undefined || fixed === null) throw error;
    onFix(fix, error);
  }
  try {
    return await call(fixed);
  } catch (error) {
    if (!(error instanceof ProviderError) || REQUEST_FIXES[error.classified.reason] !== fix) throw error;
    throw fixFailed(error, fix.still);
  }
}

/** The second failure, its message saying the fix was made and did not help. */
function fixFailed(error: ProviderError, still: string): ProviderError {
  const again = new ProviderError(
    { ...error.classified, message: `${still} (${error.classified.message})` },
    error.provider,
    error.model,
  );
  for (const [key, value] of Object.entries(error.data)) if (!(key in again.data)) again.data[key] = value;
  again.data.request_fixed = true;
  again.cause = error;
  return again;
}
