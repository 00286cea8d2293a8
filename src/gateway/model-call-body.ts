// The body of POST /v1/chat/completions in the model-gateway mode: the OpenAI fields Tenax knows,
// checked by a zod schema and turned into the internal request; every other top-level field is kept
// as it came, for OpenAI-compatible providers. What the answer could not carry back (audio output)
// or Tenax cannot do (n > 1, obfuscation padding) is refused. A bad field is a 400 that names its
// path.
import { z } from "zod";
import { HttpError } from "../http/http-error.js";
import type { ChatMessage, ContentPart, ToolChoice, ToolSpec } from "../llm/provider.js";
import type { RouteRequest } from "../llm/router.js";
import { RESPONSE_FORMAT, toResponseFormat } from "./response-format.js";
import { SAMPLING_FIELDS, samplingOf } from "./sampling.js";
import { includeObfuscation } from "./stream-options.js";

const textPart = z.strictObject({ type: z.literal("text"), text: z.string() });
const imagePart = z.strictObject({
  type: z.literal("image_url"),
  image_url: z.strictObject({
    url: z.string().regex(/^(https?:|data:image\/)/, "expected an http(s) URL or a data:image/... URL"),
    detail: z.enum(["auto", "low", "high"]).optional(),
  }),
});
const refusalPart = z.strictObject({ type: z.literal("refusal"), refusal: z.string() });

/** Text, or text parts joined: what system, assistant and tool messages may carry. */
const textContent = z
  .union([z.string(), z.array(textPart)])
  .transform((c) => (typeof c === "string" ? c : c.map((p) => p.text).join("")));

const toolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

// `name` on a message is accepted (clients send it) and not sent on: no provider Tenax speaks to
// needs it.
const name = z.string().optional();
const message = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal("system"), content: textContent, name }),
  z.strictObject({ role: z.literal("developer"), content: textContent, name }),
  z.strictObject({
    role: z.literal("user"),
    content: z.union([z.string(), z.array(z.discriminatedUnion("type", [textPart, imagePart]))]),
    name,
  }),
  z.strictObject({
    role: z.literal("assistant"),
    content: z.union([z.string(), z.array(z.union([textPart, refusalPart]))]).nullish(),
    tool_calls: z.array(toolCall).nullish(),
    refusal: z.string().nullish(),
    name,
  }),
  // LangChain names the tool on its result.
  z.strictObject({ role: z.literal("tool"), content: textContent, tool_call_id: z.string().min(1), name }),
]);

const tool = z.strictObject({
  type: z.literal("function"),
  function: z.strictObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "expected 1 to 64 letters, digits, _ or -"),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

const toolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  z.strictObject({ type: z.literal("function"), function: z.strictObject({ name: z.string().min(1) }) }),
]);

const AUDIO =
  "only text output is relayed (the answer holds text and tool calls): leave audio and modalities out";

const refused = (why: string) =>
  z
    .unknown()
    .refine((v) => v === undefined, why)
    .optional();

/** Every field Tenax reads; `null` counts as left out, as the OpenAI API takes it. */
const KNOWN = {
  model: z.string(),
  messages: z.array(message).min(1, "expected at least one message"),
  stream: z.boolean().nullish(),
  stream_options: z
    .strictObject({ include_usage: z.boolean().nullish(), include_obfuscation: includeObfuscation })
    .nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: RESPONSE_FORMAT.nullish(),
  ...SAMPLING_FIELDS,
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  n: z.literal(1, "only n: 1 is supported (one choice per call)").nullish(),
  functions: refused("functions is the deprecated form of tools: send tools instead"),
  function_call: refused("function_call is the deprecated form of tool_choice: send tool_choice instead"),
  // Sent on, these would have the provider answer with audio that the answer here has no room for.
  audio: refused(AUDIO),
  modalities: z.array(z.literal("text", AUDIO)).nullish(),
};

const bodySchema = z.looseObject(KNOWN);

export interface ModelCallBody {
  request: RouteRequest;
  stream: boolean;
  includeUsage: boolean;
}

/** The request a body asks for; a HttpError 400 naming the first bad field otherwise. */
export function parseModelCallBody(body: Record<string, unknown>): ModelCallBody {
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) throw invalidBody(parsed.error);
  const b = parsed.data;
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (!(key in KNOWN)) extra[key] = value;
  const { maxTokens, params } = samplingOf(b);
  if (b.logprobs != null) params.logprobs = b.logprobs;
  if (b.top_logprobs != null) params.top_logprobs = b.top_logprobs;
  const tools = b.tools?.map(toTool) ?? [];
  const request: RouteRequest = {
    messages: b.messages.map(toMessage),
    ...(tools.length > 0 ? { tools } : {}),
    ...(b.tool_choice != null && tools.length > 0 ? { tool_choice: toToolChoice(b.tool_choice) } : {}),
    ...(b.parallel_tool_calls != null && tools.length > 0
      ? { parallel_tool_calls: b.parallel_tool_calls }
      : {}),
    ...(b.response_format != null ? { response_format: toResponseFormat(b.response_format) } : {}),
    ...(maxTokens != null ? { max_output_tokens: maxTokens } : {}),
    ...(Object.keys(params).length > 0 ? { params } : {}),
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
  return { request, stream: b.stream === true, includeUsage: b.stream_options?.include_usage === true };
}

type WireMessage = z.infer<typeof message>;

function toMessage(m: WireMessage): ChatMessage {
  switch (m.role) {
    case "system":
    case "developer":
      return { role: "system", content: m.content };
    case "user":
      return { role: "user", content: typeof m.content === "string" ? m.content : m.content.map(toPart) };
    case "assistant": {
      const content =
        m.content == null
          ? null
          : typeof m.content === "string"
            ? m.content
            : m.content.map((p) => (p.type === "text" ? p.text : "")).join("");
      const calls = (m.tool_calls ?? []).map((c) => ({
        id: c.id,
        name: c.function.name,
        arguments: c.function.arguments,
      }));
      return calls.length > 0
        ? { role: "assistant", content, tool_calls: calls }
        : { role: "assistant", content };
    }
    case "tool":
      return { role: "tool", content: m.content, tool_call_id: m.tool_call_id };
    default: {
      const unreachable: never = m;
      throw new Error(`unknown role ${JSON.stringify(unreachable)}`);
    }
  }
}

function toPart(part: z.infer<typeof textPart> | z.infer<typeof imagePart>): ContentPart {
  if (part.type === "text") return { type: "text", text: part.text };
  const { url, detail } = part.image_url;
  return detail === undefined ? { type: "image", url } : { type: "image", url, detail };
}

function toTool(t: z.infer<typeof tool>): ToolSpec {
  const f = t.function;
  return {
    name: f.name,
    ...(f.description === undefined ? {} : { description: f.description }),
    // A function without parameters takes none: the wire wants an object schema either way.
    parameters: f.parameters ?? { type: "object", properties: {} },
    ...(f.strict == null ? {} : { strict: f.strict }),
  };
}

function toToolChoice(choice: z.infer<typeof toolChoice>): ToolChoice {
  return typeof choice === "string" ? choice : { name: choice.function.name };
}

/** `messages[1].content[0].image_url.url`: where a zod issue is, as a client writes it. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path)
    out += typeof part === "number" ? `[${part}]` : `${out === "" ? "" : "."}${String(part)}`;
  return out === "" ? "body" : out;
}

function invalidBody(error: z.ZodError): HttpError {
  const issue = error.issues[0];
  const param = issue ? fieldPath(issue.path) : "body";
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : "";
  return new HttpError(
    400,
    "invalid_request_error",
    "invalid_field",
    `${param}: ${issue?.message ?? "invalid"}${more}`,
    {},
    { error: { param } },
  );
}
