// The body of POST /v1/chat/completions for `model: "tenax"` (an agent turn), as a zod schema: the
// OpenAI fields a whole turn honours (the client's system messages, max_tokens, stop, sampling and
// penalties, user, response_format: each model call of the turn is asked for that shape, so the
// final reply has it) and the ones it sends on with each of its model calls (metadata, store,
// reasoning_effort, ...: as the model mode does) are accepted; anything else is refused by name,
// so a client never believes a field took effect when it did not. Errors are mapped to the OpenAI
// shape in one place (src/http/validate.ts).
import { z } from "zod";
import type { TurnRequest } from "../agent/turn-request.js";
import { badRequest } from "../http/http-error.js";
import { parseWith } from "../http/validate.js";
import type { ResponseFormat, SamplingParams } from "../llm/provider.js";
import { RESPONSE_FORMAT, toResponseFormat } from "./response-format.js";
import { SAMPLING_FIELDS, samplingOf } from "./sampling.js";
import { includeObfuscation } from "./stream-options.js";

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
  web_search_options: `web search is a tool OpenAI runs; the agent (model tenax) runs its own tools; ${USE_A_MODEL}`,
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
  /** Fields sent on as they came with each model call of the turn (PASSED_ON); empty for none. */
  extra: Record<string, unknown>;
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

const text = (what: string) => z.string({ error: `must be ${what}` }).nullish();

/**
 * OpenAI fields sent on, as they came, with each model call of the turn: a provider on the OpenAI
 * wire applies them (the model mode sends them on the same way). Checked for their type only; the
 * provider judges the value.
 */
const PASSED_ON = {
  metadata: z
    .record(z.string(), z.string({ error: "must be an object of strings" }), {
      error: "must be an object of strings",
    })
    .nullish(),
  store: z.boolean({ error: "must be true or false" }).nullish(),
  service_tier: text("a service tier such as auto, default, flex or priority"),
  reasoning_effort: text("a reasoning effort such as low, medium or high"),
  verbosity: text("a verbosity such as low, medium or high"),
  prompt_cache_key: text("a string"),
  prompt_cache_options: z.record(z.string(), z.unknown(), { error: "must be an object" }).nullish(),
  prompt_cache_retention: text("a retention such as in_memory or 24h"),
  safety_identifier: text("a string"),
  moderation: z.record(z.string(), z.unknown(), { error: "must be an object" }).nullish(),
};

const chatBody = z
  .strictObject(
    {
      model: z.string({ error: "must be a string (tenax, or PROVIDER/NAME from GET /v1/models)" }).optional(),
      messages: z
        .array(message, { error: "must be a non-empty array of messages" })
        .min(1, { error: "must be a non-empty array of messages" }),
      stream: z.boolean({ error: "must be true or false" }).optional(),
      stream_options: z
        .strictObject(
          { include_usage: z.unknown().optional(), include_obfuscation: includeObfuscation },
          { error: "must be an object" },
        )
        .nullable()
        .optional(),
      n: z
        .unknown()
        .refine((n) => n === undefined || n === 1, { message: "n must be 1: an agent turn gives one reply" })
        .optional(),
      ...SAMPLING_FIELDS,
      response_format: RESPONSE_FORMAT.nullish(),
      ...PASSED_ON,
    },
    { error: "the request body must be a JSON object" },
  )
  .transform((body): ChatRequest => {
    const messages = body.messages as ChatMessage[];
    const own = messages.filter((m) =>
      m.role === "system" || m.role === "developer" ? m.content !== "" : false,
    );
    const { maxTokens, params } = samplingOf(body);
    const extra: Record<string, unknown> = {};
    for (const key of Object.keys(PASSED_ON) as (keyof typeof PASSED_ON)[])
      if (body[key] != null) extra[key] = body[key];
    return {
      messages,
      stream: body.stream === true,
      includeUsage: body.stream_options?.include_usage === true,
      system: own.length > 0 ? own.map((m) => m.content).join("\n\n") : null,
      maxTokens,
      params,
      responseFormat: body.response_format == null ? null : toResponseFormat(body.response_format),
      extra,
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

/**
 * What the client asks of the turn's model calls: its system text (after the profile's prompt, or
 * instead of it: gateway.client_system), output cap, sampling, response format, the fields sent
 * on, and whether what was streamed must stay as it was (appendOnly).
 */
export function turnRequestOf(
  request: ChatRequest,
  clientSystem: "append" | "replace" = "append",
): TurnRequest {
  return {
    ...(request.system === null ? {} : { system: { text: request.system, mode: clientSystem } }),
    ...(request.maxTokens === null ? {} : { maxOutputTokens: request.maxTokens }),
    ...(Object.keys(request.params).length === 0 ? {} : { params: request.params }),
    ...(Object.keys(request.extra).length === 0 ? {} : { extra: request.extra }),
    // What an OpenAI client was streamed it keeps: a restarted stream may only go on from it.
    ...(request.stream ? { appendOnly: true } : {}),
    ...(request.responseFormat === null ? {} : { responseFormat: request.responseFormat }),
  };
}
