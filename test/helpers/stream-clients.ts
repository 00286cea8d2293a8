// The streaming calls of the three client libraries people point at an OpenAI-compatible endpoint,
// unchanged, on both of OpenAI's APIs: the official `openai` client (chat.completions and
// responses streams), the Vercel AI SDK's `streamText` (`openai.chat(...)` and the default
// Responses provider) and LangChain's `ChatOpenAI.stream` (with and without useResponsesApi), each
// with its own retries off. A call is reduced to what it assembled (text and tool calls, as the
// library hands them to its caller), and whether and how it raised.
import { createOpenAI } from "@ai-sdk/openai";
import type { AIMessageChunk } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { jsonSchema, streamText, tool } from "ai";
import OpenAI from "openai";
import { described } from "./clients.js";

export type StreamClient =
  | "openai-chat"
  | "openai-responses"
  | "ai-sdk-chat"
  | "ai-sdk-responses"
  | "langchain-chat"
  | "langchain-responses";

export const STREAM_CLIENTS: readonly StreamClient[] = [
  "openai-chat",
  "openai-responses",
  "ai-sdk-chat",
  "ai-sdk-responses",
  "langchain-chat",
  "langchain-responses",
];

/** Whether the client speaks the Responses API (its answer is also a stored Response). */
export const isResponses = (client: StreamClient): boolean => client.endsWith("-responses");

export interface AssembledCall {
  id: string;
  name: string;
  arguments: string;
}

export interface StreamOutcome {
  raised: boolean;
  status: number | null;
  code: string | null;
  message: string;
  /** The reply text as the library handed it over, delta by delta. */
  text: string;
  /** The tool calls the library assembled (the openai clients only). */
  calls: AssembledCall[];
  /** The Response id the stream announced (openai-responses only). */
  responseId: string | null;
}

export interface StreamCall {
  /** The gateway's base URL, without `/v1`. */
  url: string;
  key: string;
  model: string;
  prompt: string;
  /** A function tool `get_weather(city)` offered to the model (the openai clients only). */
  weatherTool?: boolean;
}

const WEATHER = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
};

export async function streamWith(client: StreamClient, call: StreamCall): Promise<StreamOutcome> {
  const out = { text: "", calls: [] as AssembledCall[], responseId: null as string | null };
  try {
    await RUN[client](call, out);
    return { raised: false, status: null, code: null, message: "", ...out };
  } catch (error) {
    // The AI SDK hands a chat stream's error event over as the plain error object it carried.
    const message = (error as { message?: unknown } | null)?.message;
    return { raised: true, ...described(error), ...(typeof message === "string" ? { message } : {}), ...out };
  }
}

type Sink = { text: string; calls: AssembledCall[]; responseId: string | null };

const RUN: Record<StreamClient, (call: StreamCall, out: Sink) => Promise<void>> = {
  "openai-chat": async (call, out) => {
    const stream = await openai(call).chat.completions.create({
      model: call.model,
      messages: [{ role: "user", content: call.prompt }],
      stream: true,
      ...(call.weatherTool ? { tools: [{ type: "function" as const, function: WEATHER }] } : {}),
    });
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      out.text += delta?.content ?? "";
      for (const piece of delta?.tool_calls ?? []) {
        const at = out.calls[piece.index] ?? { id: "", name: "", arguments: "" };
        out.calls[piece.index] = at;
        if (piece.id) at.id = piece.id;
        at.name += piece.function?.name ?? "";
        at.arguments += piece.function?.arguments ?? "";
      }
    }
  },
  "openai-responses": async (call, out) => {
    const stream = await openai(call).responses.create({
      model: call.model,
      input: call.prompt,
      stream: true,
      ...(call.weatherTool ? { tools: [{ type: "function" as const, strict: true, ...WEATHER }] } : {}),
    });
    const byItem = new Map<string, AssembledCall>();
    for await (const event of stream) {
      if (event.type === "response.created") out.responseId = event.response.id;
      if (event.type === "response.output_text.delta") out.text += event.delta;
      if (event.type === "response.output_item.added" && event.item.type === "function_call") {
        const at = { id: event.item.call_id, name: event.item.name, arguments: "" };
        byItem.set(event.item.id ?? "", at);
        out.calls.push(at);
      }
      if (event.type === "response.function_call_arguments.delta") {
        const at = byItem.get(event.item_id);
        if (at) at.arguments += event.delta;
      }
    }
  },
  "ai-sdk-chat": (call, out) => aiSdk(call, out, "chat"),
  "ai-sdk-responses": (call, out) => aiSdk(call, out, "responses"),
  "langchain-chat": (call, out) => langChain(call, out, false),
  "langchain-responses": (call, out) => langChain(call, out, true),
};

function openai(call: StreamCall): OpenAI {
  return new OpenAI({ baseURL: `${call.url}/v1`, apiKey: call.key, maxRetries: 0 });
}

async function aiSdk(call: StreamCall, out: Sink, api: "chat" | "responses"): Promise<void> {
  const provider = createOpenAI({ baseURL: `${call.url}/v1`, apiKey: call.key });
  // streamText reports a failure as an `error` part (and to onError), not as a throw.
  let failure: unknown = null;
  const result = streamText({
    model: api === "chat" ? provider.chat(call.model) : provider(call.model),
    prompt: call.prompt,
    maxRetries: 0,
    ...(call.weatherTool
      ? {
          tools: {
            get_weather: tool({
              description: WEATHER.description,
              inputSchema: jsonSchema(WEATHER.parameters),
            }),
          },
        }
      : {}),
    onError: ({ error }) => {
      failure ??= error;
    },
  });
  for await (const part of result.fullStream) {
    if (part.type === "text-delta") out.text += part.text;
    if (part.type === "tool-call")
      out.calls.push({ id: part.toolCallId, name: part.toolName, arguments: JSON.stringify(part.input) });
    if (part.type === "error") failure ??= part.error;
  }
  if (failure !== null) throw failure;
}

async function langChain(call: StreamCall, out: Sink, useResponsesApi: boolean): Promise<void> {
  const model = new ChatOpenAI({
    model: call.model,
    apiKey: call.key,
    configuration: { baseURL: `${call.url}/v1` },
    maxRetries: 0,
    useResponsesApi,
  });
  const runnable = call.weatherTool ? model.bindTools([{ type: "function", function: WEATHER }]) : model;
  let whole: AIMessageChunk | null = null;
  for await (const chunk of await runnable.stream(call.prompt)) {
    out.text += chunk.text;
    whole = whole === null ? chunk : whole.concat(chunk);
  }
  for (const c of whole?.tool_calls ?? [])
    out.calls.push({ id: c.id ?? "", name: c.name, arguments: JSON.stringify(c.args) });
}
