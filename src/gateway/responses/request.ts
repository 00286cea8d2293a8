// The body of POST /v1/responses: what the Responses API sends that Tenax can honour, checked by a
// strict schema; what it cannot honour (built-in tools, background runs, stored prompts...) is
// refused by name with a 400, so a client never believes a field took effect when it did not.
import { z } from "zod";
import { badRequest, HttpError } from "../../http/http-error.js";
import { includeObfuscation } from "../stream-options.js";

const text = z.string();

const inputText = z.object({ type: z.literal("input_text"), text });
const inputImage = z.object({
  type: z.literal("input_image"),
  image_url: z.string().min(1).nullish(),
  file_id: z.string().nullish(),
  detail: z.enum(["auto", "low", "high"]).nullish(),
});
/** An assistant's earlier answer, sent back as history (LangChain and others do). */
const outputText = z.object({ type: z.literal("output_text"), text }).loose();
const refusal = z.object({ type: z.literal("refusal"), refusal: text });
const contentPart = z.discriminatedUnion("type", [inputText, inputImage, outputText, refusal]);

const messageItem = z.object({
  type: z.literal("message").optional(),
  id: z.string().nullish(),
  status: z.string().nullish(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([text, z.array(contentPart)]),
});

const functionCallItem = z.object({
  type: z.literal("function_call"),
  id: z.string().nullish(),
  status: z.string().nullish(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});

const functionCallOutputItem = z.object({
  type: z.literal("function_call_output"),
  id: z.string().nullish(),
  status: z.string().nullish(),
  call_id: z.string().min(1),
  output: z.union([text, z.array(z.discriminatedUnion("type", [inputText, inputImage]))]),
});

export const inputItemSchema = z.union([messageItem, functionCallItem, functionCallOutputItem]);

const functionTool = z.object({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const toolChoice = z.union(
  [z.enum(["auto", "none", "required"]), z.object({ type: z.literal("function"), name: z.string().min(1) })],
  { error: 'expected "auto", "none", "required" or {"type": "function", "name": NAME}' },
);

const format = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    name: z.string().min(1),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().nullish(),
    strict: z.boolean().nullish(),
  }),
]);

export const responsesRequestSchema = z.strictObject({
  model: z.string().min(1),
  input: z.union([text, z.array(inputItemSchema)], { error: "expected a string or an array of items" }),
  instructions: z.string().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  store: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.strictObject({ include_obfuscation: includeObfuscation }).nullish(),
  tools: z.array(functionTool).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z.strictObject({ format: format.nullish() }).nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
  /** Only an empty list: nothing extra can be included. */
  include: z.array(z.string()).max(0).nullish(),
  /** Only false: a response is answered while the client waits (POST /v1/runs is the background API). */
  background: z.literal(false).nullish(),
  truncation: z.literal("disabled").nullish(),
});

export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;
export type InputItem = z.infer<typeof inputItemSchema>;
export type MessageItem = z.infer<typeof messageItem>;
export type FunctionTool = z.infer<typeof functionTool>;

/** Fields of the Responses API that Tenax cannot honour, with what to do instead. */
const REFUSED: Record<string, string> = {
  conversation: "conversations are not served; chain responses with previous_response_id",
  prompt: "stored prompt templates are not served; send instructions and input",
  reasoning: "reasoning options are not forwarded; leave reasoning out",
  service_tier: "service tiers are not served; leave service_tier out",
  top_logprobs: "log probabilities are not served by /v1/responses; use /v1/chat/completions",
  max_tool_calls: "max_tool_calls is not served; leave it out",
  prompt_cache_key: "prompt caching keys are not forwarded; leave prompt_cache_key out",
  prompt_cache_retention: "prompt cache retention is not served; leave it out",
  prompt_cache_options: "prompt caching options are not forwarded; leave prompt_cache_options out",
  moderation: "moderation settings are not forwarded; leave moderation out",
  safety_identifier: "safety identifiers are not forwarded; send user instead",
  context_management: "context management is done by Tenax itself; leave it out",
};

/** Built-in tools of OpenAI's platform that no Tenax provider runs. */
const NO_BUILT_IN =
  "is an OpenAI-hosted tool that Tenax cannot run; send function tools (type function) and run them yourself, or use model tenax, whose agent has its own tools";

/** Check a body; throws a 400 naming the field and what was expected. */
export function parseResponsesRequest(body: unknown): ResponsesRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("invalid_body", "the request body must be a JSON object");
  const fields = body as Record<string, unknown>;
  const refused = Object.keys(fields).filter((k) => k in REFUSED && fields[k] !== null);
  if (refused.length > 0)
    throw unsupported(refused.map((k) => `${k} (${REFUSED[k]})`).join("; "), refused[0] ?? "");
  refuseBuiltInTools(fields.tools);
  refuseSpecialFields(fields);
  checkItems(fields.input);
  const parsed = responsesRequestSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw invalid(parsed.error.issues[0]);
}

/** Each input item against the schema its type names, so an error says which field of which item. */
function checkItems(input: unknown): void {
  if (!Array.isArray(input)) return;
  input.forEach((item, i) => {
    const type = typeof item === "object" && item !== null ? (item as { type?: unknown }).type : undefined;
    const schema =
      type === "function_call"
        ? functionCallItem
        : type === "function_call_output"
          ? functionCallOutputItem
          : messageItem;
    const issue = schema.safeParse(item).error?.issues[0];
    if (issue) throw invalid({ ...issue, path: ["input", i, ...issue.path] });
  });
}

function invalid(issue: z.core.$ZodIssue | undefined): HttpError {
  const path = issue?.path.map(String).join(".") ?? "";
  const message =
    issue?.code === "unrecognized_keys"
      ? `unknown field${issue.keys.length > 1 ? "s" : ""} in the request body: ${issue.keys.join(", ")}`
      : `${path || "the body"}: ${issue?.message ?? "is invalid"}`;
  return new HttpError(
    400,
    "invalid_request_error",
    "invalid_field",
    message,
    {},
    { error: { param: path || null } },
  );
}

function refuseBuiltInTools(tools: unknown): void {
  if (!Array.isArray(tools)) return;
  tools.forEach((tool, i) => {
    const type = typeof tool === "object" && tool !== null ? (tool as { type?: unknown }).type : undefined;
    if (typeof type === "string" && type !== "function")
      throw unsupported(
        `tools[${i}]: the tool type ${JSON.stringify(type)} ${NO_BUILT_IN}`,
        `tools.${i}.type`,
      );
  });
}

/** Values the schema would refuse with a less helpful message. */
function refuseSpecialFields(fields: Record<string, unknown>): void {
  if (fields.background === true)
    throw unsupported(
      "background (a response is answered while the client waits; for a turn in the background use POST /v1/runs)",
      "background",
    );
  if (fields.truncation === "auto")
    throw unsupported(
      "truncation auto (Tenax compresses a long session itself; leave truncation out)",
      "truncation",
    );
  if (Array.isArray(fields.include) && fields.include.length > 0)
    throw unsupported(
      `include ${JSON.stringify(fields.include)} (nothing extra can be included; leave include out)`,
      "include",
    );
  const verbosity = (fields.text as { verbosity?: unknown } | null | undefined)?.verbosity;
  if (verbosity !== undefined && verbosity !== null)
    throw unsupported(
      "text.verbosity (not forwarded to chat completions providers; leave it out)",
      "text.verbosity",
    );
  const input = fields.input;
  if (!Array.isArray(input)) return;
  input.forEach((item, i) => {
    const type = typeof item === "object" && item !== null ? (item as { type?: unknown }).type : undefined;
    const content = (item as { content?: unknown } | null)?.content;
    if (Array.isArray(content))
      content.forEach((part, j) => {
        if ((part as { type?: unknown } | null)?.type === "input_file")
          throw unsupported(
            `input[${i}].content[${j}]: input_file parts are not served (Tenax has no files API); send the text as input_text`,
            `input.${i}.content.${j}.type`,
          );
      });
    if (
      type === undefined ||
      type === "message" ||
      type === "function_call" ||
      type === "function_call_output"
    )
      return;
    throw unsupported(
      `input[${i}]: items of type ${JSON.stringify(type)} are not served; send message, function_call and function_call_output items (chain earlier answers with previous_response_id)`,
      `input.${i}.type`,
    );
  });
}

function unsupported(what: string, param: string): HttpError {
  return new HttpError(
    400,
    "invalid_request_error",
    "unsupported_field",
    `unsupported: ${what}`,
    {},
    { error: { param } },
  );
}
