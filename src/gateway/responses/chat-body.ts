// A Responses API request, and the stored chain before it, as the body of Tenax's own
// POST /v1/chat/completions: items become chat messages, function tools and text.format their
// chat forms. The chat route then does the rest (agent turn or model call), as for any client.
import { badRequest } from "../../http/http-error.js";
import type { FunctionTool, InputItem, MessageItem, ResponsesRequest } from "./request.js";

type ChatPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: string } };

export type ChatMessage =
  | { role: "user" | "system" | "developer"; content: string | ChatPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** The request's input as items (a string is one user message). */
export function inputItems(input: ResponsesRequest["input"]): InputItem[] {
  return typeof input === "string" ? [{ type: "message", role: "user", content: input }] : input;
}

/** Items as chat messages: function calls join the assistant message before them. */
export function itemsToMessages(items: readonly InputItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  items.forEach((item, i) => {
    if (item.type === "function_call") {
      const call: ChatToolCall = {
        id: item.call_id,
        type: "function",
        function: { name: item.name, arguments: item.arguments },
      };
      const last = messages[messages.length - 1];
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
      return;
    }
    if (item.type === "function_call_output") {
      const output =
        typeof item.output === "string"
          ? item.output
          : item.output.map((p) => partText(p, `input[${i}].output`)).join("");
      messages.push({ role: "tool", tool_call_id: item.call_id, content: output });
      return;
    }
    messages.push(messageOf(item, `input[${i}]`));
  });
  return messages;
}

function messageOf(item: MessageItem, at: string): ChatMessage {
  if (item.role === "assistant") {
    const content =
      typeof item.content === "string"
        ? item.content
        : item.content.map((p, j) => partText(p, `${at}.content[${j}]`)).join("");
    return { role: "assistant", content };
  }
  if (typeof item.content === "string") return { role: item.role, content: item.content };
  const parts = item.content.map((part, j): ChatPart => {
    if (part.type !== "input_image") return { type: "text", text: partText(part, `${at}.content[${j}]`) };
    if (!part.image_url)
      throw badRequest(
        "unsupported_field",
        `${at}.content[${j}]: an image by file_id is not served (Tenax has no files API); send image_url, a URL or a data: URL`,
      );
    return {
      type: "image_url",
      image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) },
    };
  });
  // Text alone stays a string: every chat server reads that.
  return parts.every((p) => p.type === "text")
    ? { role: item.role, content: parts.map((p) => (p.type === "text" ? p.text : "")).join("") }
    : { role: item.role, content: parts };
}

type AnyPart = Exclude<MessageItem["content"], string>[number];

function partText(part: AnyPart, at: string): string {
  switch (part.type) {
    case "input_text":
    case "output_text":
      return part.text;
    case "refusal":
      return part.refusal;
    case "input_image":
      throw badRequest("unsupported_field", `${at}: an image is only taken in a user message`);
    default: {
      const never: never = part;
      throw badRequest("invalid_field", `${at}: unknown part ${JSON.stringify(never)}`);
    }
  }
}

export interface ChatBodyInput {
  request: ResponsesRequest;
  /** Messages before the request's own input: a replayed chain, or none. */
  history: ChatMessage[];
  /** The request's own input as chat messages. */
  messages: ChatMessage[];
  stream: boolean;
}

/** The body for POST /v1/chat/completions. */
export function chatBody({ request, history, messages, stream }: ChatBodyInput): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    messages: [
      ...(request.instructions ? [{ role: "system", content: request.instructions }] : []),
      ...history,
      ...messages,
    ],
    stream,
  };
  if (stream) body.stream_options = { include_usage: true };
  if (request.tools && request.tools.length > 0) body.tools = request.tools.map(chatTool);
  if (request.tool_choice != null)
    body.tool_choice =
      typeof request.tool_choice === "string"
        ? request.tool_choice
        : { type: "function", function: { name: request.tool_choice.name } };
  if (request.parallel_tool_calls != null) body.parallel_tool_calls = request.parallel_tool_calls;
  const format = request.text?.format;
  if (format?.type === "json_object") body.response_format = { type: "json_object" };
  if (format?.type === "json_schema")
    body.response_format = {
      type: "json_schema",
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description != null ? { description: format.description } : {}),
        ...(format.strict != null ? { strict: format.strict } : {}),
      },
    };
  if (request.max_output_tokens != null) body.max_tokens = request.max_output_tokens;
  if (request.temperature != null) body.temperature = request.temperature;
  if (request.top_p != null) body.top_p = request.top_p;
  if (request.user != null) body.user = request.user;
  return body;
}

function chatTool(tool: FunctionTool) {
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description != null ? { description: tool.description } : {}),
      parameters: tool.parameters ?? { type: "object", properties: {} },
      ...(tool.strict != null ? { strict: tool.strict } : {}),
    },
  };
}
