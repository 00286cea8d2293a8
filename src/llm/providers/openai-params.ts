// Our request on the Chat Completions wire: messages (images as `image_url` parts), tools and the
// choice among them, the output format, the sampling parameters, and the caller's fields Tenax does
// not know, sent as they came (under the known ones, so none can change what Tenax sets).
import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from "openai/resources/chat/completions";
import type {
  ChatMessage,
  ChatRequest,
  ContentPart,
  ResponseFormat,
  ToolChoice,
  ToolSpec,
} from "../provider.js";

export type MaxTokensField = "max_tokens" | "max_completion_tokens";

/**
 * The request's JSON body. A turn sends the same tool objects on every call, and their JSON
 * Schemas are most of a short request's bytes: each tool's JSON is made once per tool object and
 * set into the body as text.
 */
export function chatBody(request: ChatRequest, maxTokensField: MaxTokensField): string {
  const tools = request.tools ?? [];
  const params = toParams({ ...request, tools: [] }, maxTokensField);
  if (tools.length === 0) return JSON.stringify(params);
  // Tenax's tools win over a caller's unknown fields, as every known field does.
  const { tools: _theirs, ...rest } = params as ChatCompletionCreateParamsStreaming & { tools?: unknown };
  const json = JSON.stringify(rest);
  return `${json.slice(0, -1)},"tools":[${tools.map(toolJson).join(",")}]}`;
}

const toolJsons = new WeakMap<ToolSpec, string>();

/** One tool on the wire, as JSON; kept per tool object (a tool changed in place is not seen). */
function toolJson(tool: ToolSpec): string {
  let json = toolJsons.get(tool);
  if (json === undefined) {
    json = JSON.stringify(toTool(tool));
    toolJsons.set(tool, json);
  }
  return json;
}

export function toParams(
  request: ChatRequest,
  maxTokensField: MaxTokensField,
): ChatCompletionCreateParamsStreaming {
  const p = request.params ?? {};
  const known: ChatCompletionCreateParamsStreaming = {
    model: request.model,
    messages: request.messages.map(toMessage),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools && request.tools.length > 0 ? { tools: request.tools.map(toTool) } : {}),
    ...(request.tool_choice === undefined ? {} : { tool_choice: toToolChoice(request.tool_choice) }),
    ...(request.parallel_tool_calls === undefined
      ? {}
      : { parallel_tool_calls: request.parallel_tool_calls }),
    ...(request.response_format === undefined ? {} : { response_format: toFormat(request.response_format) }),
    ...(request.max_output_tokens === undefined ? {} : { [maxTokensField]: request.max_output_tokens }),
    ...(p.temperature === undefined ? {} : { temperature: p.temperature }),
    ...(p.top_p === undefined ? {} : { top_p: p.top_p }),
    ...(p.frequency_penalty === undefined ? {} : { frequency_penalty: p.frequency_penalty }),
    ...(p.presence_penalty === undefined ? {} : { presence_penalty: p.presence_penalty }),
    ...(p.stop === undefined ? {} : { stop: p.stop }),
    ...(p.seed === undefined ? {} : { seed: p.seed }),
    ...(p.user === undefined ? {} : { user: p.user }),
    ...(p.logprobs === undefined ? {} : { logprobs: p.logprobs }),
    ...(p.top_logprobs === undefined ? {} : { top_logprobs: p.top_logprobs }),
  };
  return request.extra ? { ...request.extra, ...known } : known;
}

function toMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content };
    case "user":
      return {
        role: "user",
        content: typeof message.content === "string" ? message.content : message.content.map(toPart),
      };
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

function toPart(part: ContentPart): ChatCompletionContentPart {
  if (part.type === "text") return { type: "text", text: part.text };
  return {
    type: "image_url",
    image_url: { url: part.url, ...(part.detail === undefined ? {} : { detail: part.detail }) },
  };
}

function toTool(tool: ToolSpec): ChatCompletionTool {
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.parameters,
      ...(tool.strict === undefined ? {} : { strict: tool.strict }),
    },
  };
}

function toToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  return typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
}

function toFormat(
  format: ResponseFormat,
): NonNullable<ChatCompletionCreateParamsStreaming["response_format"]> {
  if (format.type !== "json_schema") return format;
  return {
    type: "json_schema",
    json_schema: {
      name: format.name,
      ...(format.schema === undefined ? {} : { schema: format.schema }),
      ...(format.description === undefined ? {} : { description: format.description }),
      ...(format.strict === undefined ? {} : { strict: format.strict }),
    },
  };
}
