// The Response object of the Responses API, built from what the chat route answered: output items
// (an assistant message with output_text, function calls), status from the finish reason, usage
// in input/output tokens, and the request's own settings echoed back.
import type { ChatCompletion, ChatUsage } from "./chat-answer.js";
import type { FunctionTool, InputItem, ResponsesRequest } from "./request.js";

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: never[];
  logprobs: never[];
}

export interface OutputMessage {
  type: "message";
  id: string;
  status: "in_progress" | "completed" | "incomplete";
  role: "assistant";
  content: OutputText[];
}

export interface OutputFunctionCall {
  type: "function_call";
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: "in_progress" | "completed" | "incomplete";
}

export type OutputItem = OutputMessage | OutputFunctionCall;

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: null; summary: null };
  store: boolean;
  temperature: number | null;
  text: { format: Record<string, unknown> };
  tool_choice: unknown;
  tools: FunctionTool[];
  top_p: number | null;
  truncation: "disabled";
  usage: ResponseUsage | null;
  user: string | null;
  metadata: Record<string, string>;
}

/** What a response is known by before its answer: its id, time and the request it answers. */
export interface ResponseMeta {
  id: string;
  /** Seconds since the epoch. */
  createdAt: number;
  request: ResponsesRequest;
}

/** Ids for output items, made by the caller (so tests can fix them). */
export type ItemIds = (prefix: "msg_" | "fc_" | "call_") => string;

/** The Response object with `status` and no output yet: what response.created carries. */
export function responseShell(meta: ResponseMeta, status: ResponseStatus = "in_progress"): ResponseObject {
  const r = meta.request;
  return {
    id: meta.id,
    object: "response",
    created_at: meta.createdAt,
    status,
    error: null,
    incomplete_details: null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    model: r.model,
    output: [],
    output_text: "",
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: r.store ?? true,
    temperature: r.temperature ?? null,
    text: { format: r.text?.format ?? { type: "text" } },
    tool_choice: r.tool_choice ?? "auto",
    tools: r.tools ?? [],
    top_p: r.top_p ?? null,
    truncation: "disabled",
    usage: null,
    user: r.user ?? null,
    metadata: r.metadata ?? {},
  };
}

/** A finished response: its output, the status its finish reason gives, and usage. */
export function finishedResponse(
  meta: ResponseMeta,
  output: OutputItem[],
  finishReason: string | null | undefined,
  usage: ChatUsage | null | undefined,
): ResponseObject {
  const incomplete = incompleteReason(finishReason);
  const status = incomplete === null ? "completed" : "incomplete";
  const items = output.map((item) => withStatus(item, status));
  return {
    ...responseShell(meta, status),
    incomplete_details: incomplete === null ? null : { reason: incomplete },
    output: items,
    output_text: outputText(items),
    usage: usage ? responseUsage(usage) : null,
  };
}

/** A response whose turn or call failed: what it said so far, and the error. */
export function failedResponse(
  meta: ResponseMeta,
  output: OutputItem[],
  error: { code: string; message: string },
): ResponseObject {
  const items = output.map((item) => withStatus(item, "incomplete"));
  return { ...responseShell(meta, "failed"), error, output: items, output_text: outputText(items) };
}

/** A non-streamed chat.completion as a Response. */
export function completionToResponse(
  meta: ResponseMeta,
  completion: ChatCompletion,
  ids: ItemIds,
): ResponseObject {
  const choice = completion.choices[0];
  const output: OutputItem[] = [];
  const text = choice?.message.content ?? "";
  const calls = choice?.message.tool_calls ?? [];
  if (text !== "" || calls.length === 0) output.push(messageItem(ids("msg_"), text, "completed"));
  for (const call of calls)
    output.push({
      type: "function_call",
      id: ids("fc_"),
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: "completed",
    });
  return finishedResponse(meta, output, choice?.finish_reason, completion.usage);
}

export function messageItem(id: string, text: string, status: OutputMessage["status"]): OutputMessage {
  return { type: "message", id, status, role: "assistant", content: [outputTextPart(text)] };
}

export function outputTextPart(text: string): OutputText {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/** The output items as input items of a later request (a chain replayed as history). */
export function outputAsInput(output: readonly OutputItem[]): InputItem[] {
  return output.map(
    (item): InputItem =>
      item.type === "message"
        ? {
            type: "message",
            role: "assistant",
            content: item.content.map((p) => ({ type: "output_text", text: p.text })),
          }
        : { type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments },
  );
}

function withStatus<T extends OutputItem>(item: T, status: ResponseStatus): T {
  return { ...item, status: status === "completed" ? "completed" : "incomplete" };
}

function outputText(output: readonly OutputItem[]): string {
  return output.flatMap((item) => (item.type === "message" ? item.content.map((p) => p.text) : [])).join("");
}

/** OpenAI's reasons for an incomplete response; null for a complete one. */
function incompleteReason(finishReason: string | null | undefined): string | null {
  if (finishReason === "length") return "max_output_tokens";
  if (finishReason === "content_filter") return "content_filter";
  return null;
}

export function responseUsage(usage: ChatUsage): ResponseUsage {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
  };
}
