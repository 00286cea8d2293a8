// What a request asks of the simulator's answer, honoured as a provider would: a tool_choice that
// names a function (or `required`) is answered with a call of it whose arguments are valid for its
// parameters; a response_format with JSON (an instance of the json_schema, or an object holding the
// echo for json_object); and any answer, scripted or not, is cut at the first stop sequence
// (finish_reason `stop`) and at the output cap, max_completion_tokens or max_tokens, in the
// simulator's own token count (finish_reason `length`). Deterministic: the same request, the same answer.
import type { Answer } from "./answer.js";
import { instanceOf } from "./json-instance.js";
import { simError } from "./respond.js";
import {
  type ChatRequest,
  defaultReplyText,
  errorBody,
  estimateTokens,
  usageFor,
  type WireToolCall,
} from "./wire.js";

/** The answer when no step is scripted: the forced tool call, the asked-for JSON, or the echo. */
export function defaultAnswer(request: ChatRequest, prompt: number, idPrefix: string): Answer {
  const forced = forcedTool(request);
  if (forced !== null) {
    const call: WireToolCall = {
      id: `call_${idPrefix}_0`,
      type: "function",
      function: { name: forced.name, arguments: JSON.stringify(instanceOf(forced.parameters)) },
    };
    return {
      text: "",
      toolCalls: [call],
      finishReason: "tool_calls",
      usage: usageFor(prompt, call.function.name.length + call.function.arguments.length),
    };
  }
  const text = formatted(request) ?? defaultReplyText(request);
  return { text, toolCalls: [], finishReason: "stop", usage: usageFor(prompt, text.length) };
}

/** The answer cut where the request's stop sequences and output cap say. */
export function limited(answer: Answer, request: ChatRequest): Answer {
  let { text, finishReason } = answer;
  const stops = typeof request.stop === "string" ? [request.stop] : (request.stop ?? []);
  const at = Math.min(...stops.filter((s) => s !== "").map((s) => indexOrEnd(text, s)), text.length);
  if (at < text.length) {
    text = text.slice(0, at);
    finishReason = "stop";
  }
  const cap = request.max_completion_tokens ?? request.max_tokens;
  // The simulator counts a token for every four characters (estimateTokens).
  if (cap != null && estimateTokens(text.length) > cap) {
    text = [...text].slice(0, cap * 4).join("");
    finishReason = "length";
  }
  if (text === answer.text) return answer;
  const prompt = answer.usage.prompt_tokens;
  const args = answer.toolCalls.reduce((n, c) => n + c.function.name.length + c.function.arguments.length, 0);
  return { ...answer, text, finishReason, usage: usageFor(prompt, text.length + args) };
}

function indexOrEnd(text: string, stop: string): number {
  const i = text.indexOf(stop);
  return i < 0 ? text.length : i;
}

/** The text a response_format asks for, or null for free text. */
function formatted(request: ChatRequest): string | null {
  const format = request.response_format;
  if (format == null || format.type === "text") return null;
  if (format.type === "json_object") return JSON.stringify({ echo: defaultReplyText(request) });
  return JSON.stringify(instanceOf(format.json_schema.schema ?? {}, format.json_schema.name));
}

/**
 * The function a request makes the model call, when it does: tool_choice names it, or is `required`.
 * Throws the provider's 400 when it names no function of the request's tools (checked before any
 * scripted step, as a provider checks a request before it answers).
 */
export function forcedTool(request: ChatRequest): { name: string; parameters: unknown } | null {
  const choice = request.tool_choice;
  if (choice == null || choice === "auto" || choice === "none") return null;
  const tools = (request.tools ?? []).flatMap((t) => {
    const fn = (t as { function?: { name?: unknown; parameters?: unknown } } | null)?.function;
    return typeof fn?.name === "string" ? [{ name: fn.name, parameters: fn.parameters ?? {} }] : [];
  });
  if (choice === "required") {
    const first = tools[0];
    if (first === undefined)
      throw simError(
        400,
        errorBody(
          "tool_choice is required but no tools were given",
          "invalid_request_error",
          null,
          "tool_choice",
        ),
      );
    return first;
  }
  const named = tools.find((t) => t.name === choice.function.name);
  if (named === undefined)
    throw simError(
      400,
      errorBody(
        `Invalid value for 'tool_choice': no function named '${choice.function.name}' was specified in the 'tools' parameter.`,
        "invalid_request_error",
        null,
        "tool_choice",
      ),
    );
  return named;
}
