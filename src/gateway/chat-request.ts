// The body of POST /v1/chat/completions: the OpenAI fields a whole-turn gateway can honour or
// safely ignore are accepted; anything else is refused by name, so a client never believes a
// field took effect when it did not.
import { badRequest } from "./http-error.js";

/**
 * Accepted and honoured: messages, stream, stream_options (include_usage). Accepted and ignored,
 * because the profile's config decides them for every turn: model (the reply names the model
 * that answered), temperature, top_p, max_tokens, max_completion_tokens, n (1 only), user, stop,
 * seed, presence_penalty, frequency_penalty, metadata, store.
 */
const ACCEPTED = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "n",
  "user",
  "stop",
  "seed",
  "presence_penalty",
  "frequency_penalty",
  "metadata",
  "store",
]);

/** Refused with a reason: the agent owns its tools and its output format. */
const REFUSED: Record<string, string> = {
  tools: "the agent runs its own tools; client-side tools are not supported",
  tool_choice: "the agent runs its own tools; client-side tools are not supported",
  functions: "the agent runs its own tools; client-side functions are not supported",
  function_call: "the agent runs its own tools; client-side functions are not supported",
  parallel_tool_calls: "the agent runs its own tools; client-side tools are not supported",
  response_format: "structured output is not supported; the reply is the agent's text",
  logprobs: "log probabilities are not available from a whole agent turn",
  top_logprobs: "log probabilities are not available from a whole agent turn",
  logit_bias: "logit bias is not supported",
  audio: "audio output is not supported",
  modalities: "only text is supported",
  prediction: "predicted outputs are not supported",
};

export interface ChatMessage {
  role: "user" | "assistant" | "system" | "developer";
  content: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export function parseChatRequest(body: unknown): ChatRequest {
  if (!isObject(body)) throw badRequest("invalid_body", "the request body must be a JSON object");
  const refused = Object.keys(body).filter((k) => k in REFUSED);
  if (refused.length > 0) {
    const reasons = refused.map((k) => `${k} (${REFUSED[k]})`).join("; ");
    throw badRequest("unsupported_field", `unsupported field${refused.length > 1 ? "s" : ""}: ${reasons}`);
  }
  const unknown = Object.keys(body).filter((k) => !ACCEPTED.has(k));
  if (unknown.length > 0)
    throw badRequest(
      "unknown_field",
      `unknown field${unknown.length > 1 ? "s" : ""} in the request body: ${unknown.join(", ")}`,
    );
  if (body.stream !== undefined && typeof body.stream !== "boolean")
    throw badRequest("invalid_field", "stream must be true or false");
  if (body.n !== undefined && body.n !== 1)
    throw badRequest("invalid_field", "n must be 1: an agent turn gives one reply");
  if (body.model !== undefined && typeof body.model !== "string")
    throw badRequest("invalid_field", "model must be a string");
  const options = body.stream_options;
  if (options !== undefined && options !== null && !isObject(options))
    throw badRequest("invalid_field", "stream_options must be an object");
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw badRequest("invalid_field", "messages must be a non-empty array");
  const messages = body.messages.map((m, i) => parseMessage(m, i));
  return {
    messages,
    stream: body.stream === true,
    includeUsage: isObject(options) && options.include_usage === true,
  };
}

function parseMessage(value: unknown, index: number): ChatMessage {
  const at = `messages[${index}]`;
  if (!isObject(value)) throw badRequest("invalid_field", `${at} must be an object`);
  const role = value.role;
  if (role === "tool" || role === "function")
    throw badRequest("invalid_field", `${at}: role ${role} is not supported; the agent runs its own tools`);
  if (role !== "user" && role !== "assistant" && role !== "system" && role !== "developer")
    throw badRequest("invalid_field", `${at}.role must be user, assistant, system or developer`);
  if (value.tool_calls !== undefined && value.tool_calls !== null)
    throw badRequest("invalid_field", `${at}.tool_calls is not supported; the agent runs its own tools`);
  return { role, content: textOf(value.content, at) };
}

function textOf(content: unknown, at: string): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (!Array.isArray(content))
    throw badRequest("invalid_field", `${at}.content must be a string or an array of parts`);
  return content
    .map((part, i) => {
      if (isObject(part) && part.type === "text" && typeof part.text === "string") return part.text;
      throw badRequest("invalid_field", `${at}.content[${i}]: only text parts are supported`);
    })
    .join("");
}
