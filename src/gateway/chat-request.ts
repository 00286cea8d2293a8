// The body of POST /v1/chat/completions for `model: "tenax"` (an agent turn), as a zod schema: the
// OpenAI fields a whole turn honours (the client's system messages, max_tokens, stop, sampling,
// user, response_format: each model call of the turn is asked for that shape, so the final reply
// has it) or can safely ignore are accepted; anything else is refused by name, so a client never
// believes a field took effect when it did not. Errors are mapped to the OpenAI shape in one place
// (src/http/validate.ts).
import { z } from "zod";
import { badRequest } from "../http/http-error.js";
import { parseWith } from "../http/validate.js";
import type { ResponseFormat, SamplingParams } from "../llm/provider.js";
import { RESPONSE_FORMAT, toResponseFormat } from "./response-format.js";
import { SAMPLING_FIELDS, samplingOf } from "./sampling.js";

/** Refused with a reason: the agent owns its tools and its output format. */
const USE_A_MODEL =
  "send it with model PROVIDER/NAME (GET /v1/models lists them) for one model call with your own tools";
const REFUSED: Record<string, string> = {
  tools: `the agent (model tenax) runs its own tools; ${USE_A_MODEL}`,
  tool_choice: `the agent (model tenax) runs its own tools; ${USE_A_MODEL}`,
  functions: `the agent (model tenax) runs its own tools; ${USE_A_MODEL}`,
  function_call: `the agent (model tenax) runs its own tools; ${USE_A_MODEL}`,
  parallel_tool_calls: `the agent (model tenax) runs its own tools; ${USE_A_MODEL}`,
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
  /** The client's system and developer messages, in order, joined; null when it sent none. */
  system: string | null;
  /** The client's cap on each model call's output (max_completion_tokens, else max_tokens). */
  maxTokens: number | null;
  params: SamplingParams;
  /** The shape every model call of the turn is asked for (so the final reply has it); null: free text. */
  responseFormat: ResponseFormat | null;
}

const ROLES = ["user", "assistant", "system", "developer"] as const;

/** A message's text: a string, nothing, or text parts joined. */
const content = z.unknown().transform((value, ctx): string => {
  if (typeof value === "string") return value;
  if (value === null || value === undefined) return "";
  if (!Array.isArray(value)) {
    ctx.addIssue({ code: "custom", message: "must be a string or an array of parts" });
    return z.NEVER;
  }
  let text = "";
  for (const [i, part] of value.entries()) {
    const p = part as { type?: unknown; text?: unknown } | null;
    if (typeof p === "object" && p !== null && p.type === "text" && typeof p.text === "string")
      text += p.text;
    else {
      ctx.addIssue({ code: "custom", message: "only text parts are supported by an agent turn", path: [i] });
      return z.NEVER;
    }
  }
  return text;
});

const role = z.unknown().transform((value, ctx): ChatMessage["role"] => {
  if (value === "tool" || value === "function") {
    ctx.addIssue({ code: "custom", message: `role ${value} is not supported; the agent runs its own tools` });
    return z.NEVER;
  }
  if (!ROLES.includes(value as ChatMessage["role"])) {
    ctx.addIssue({ code: "custom", message: `must be ${ROLES.slice(0, -1).join(", ")} or developer` });
    return z.NEVER;
  }
  return value as ChatMessage["role"];
});

const message = z.looseObject(
  {
    role,
    content,
    tool_calls: z
      .unknown()
      .refine((v) => v === undefined || v === null, {
        message: "must be left out: the agent runs its own tools",
      })
      .optional(),
  },
  { error: "must be an object" },
);

/** Accepted and ignored: the profile's config decides them for every turn. */
const ignored = z.unknown().optional();

const chatBody = z
  .strictObject(
    {
      model: z.string({ error: "must be a string (tenax, or PROVIDER/NAME from GET /v1/models)" }).optional(),
      messages: z
        .array(message, { error: "must be a non-empty array of messages" })
        .min(1, { error: "must be a non-empty array of messages" }),
      stream: z.boolean({ error: "must be true or false" }).optional(),
      stream_options: z
        .looseObject({ include_usage: z.unknown().optional() }, { error: "must be an object" })
        .nullable()
        .optional(),
      n: z
        .unknown()
        .refine((n) => n === undefined || n === 1, { message: "n must be 1: an agent turn gives one reply" })
        .optional(),
      ...SAMPLING_FIELDS,
      response_format: RESPONSE_FORMAT.nullish(),
      presence_penalty: ignored,
      frequency_penalty: ignored,
      metadata: ignored,
      store: ignored,
    },
    { error: "the request body must be a JSON object" },
  )
  .transform((body): ChatRequest => {
    const messages = body.messages as ChatMessage[];
    const own = messages.filter((m) =>
      m.role === "system" || m.role === "developer" ? m.content !== "" : false,
    );
    const { maxTokens, params } = samplingOf(body);
    return {
      messages,
      stream: body.stream === true,
      includeUsage: body.stream_options?.include_usage === true,
      system: own.length > 0 ? own.map((m) => m.content).join("\n\n") : null,
      maxTokens,
      params,
      responseFormat: body.response_format == null ? null : toResponseFormat(body.response_format),
    };
  });

/** The body of an agent turn, or the 400 that names the field. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("invalid_body", "the request body must be a JSON object");
  // What cannot be honoured is named first, with why, before any other problem of the body.
  // Left empty (`tools: []`, `null`), such a field asks for nothing, and is ignored.
  const fields = body as Record<string, unknown>;
  const asks = (k: string) => !(fields[k] === null || (Array.isArray(fields[k]) && fields[k].length === 0));
  const refused = Object.keys(body).filter((k) => k in REFUSED && asks(k));
  if (refused.length > 0) {
    const reasons = refused.map((k) => `${k} (${REFUSED[k]})`).join("; ");
    throw badRequest("unsupported_field", `unsupported field${refused.length > 1 ? "s" : ""}: ${reasons}`, {
      error: { param: refused[0] },
    });
  }
  const rest = Object.fromEntries(Object.entries(fields).filter(([k]) => !(k in REFUSED)));
  return parseWith(chatBody, rest);
}
