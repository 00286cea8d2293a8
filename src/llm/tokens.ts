// A cheap, deliberately generous guess of a request's size in tokens, for the decisions that must
// be made before a provider reports real usage: does a model's context window hold this request,
// and how large was the context that failed. About four characters per token for English text and
// code; a little overhead per message for the role and framing.
import type { ChatMessage, ToolSpec } from "./provider.js";

const CHARS_PER_TOKEN = 4;
const PER_MESSAGE = 4;
/** About 85 tokens, what a low-detail image costs at OpenAI. */
const IMAGE_CHARS = 340;

// A turn sends the same tool objects on every call, and serialising twenty of them costs about
// 30 µs each time; their size is kept per object. A tool changed in place keeps its old size,
// which only shifts an estimate.
const toolChars = new WeakMap<ToolSpec, number>();

function charsOf(tool: ToolSpec): number {
  let chars = toolChars.get(tool);
  if (chars === undefined) {
    chars = JSON.stringify(tool).length;
    toolChars.set(tool, chars);
  }
  return chars;
}

export function estimateTokens(messages: readonly ChatMessage[], tools: readonly ToolSpec[] = []): number {
  let chars = 0;
  for (const message of messages) {
    const content = message.content;
    if (typeof content === "string") chars += content.length;
    else if (content !== null)
      // An image is counted as a small one; its real cost is the provider's to say.
      for (const part of content) chars += part.type === "text" ? part.text.length : IMAGE_CHARS;
    if (message.role === "assistant" && message.tool_calls) {
      for (const call of message.tool_calls) chars += call.name.length + call.arguments.length;
    }
  }
  for (const tool of tools) chars += charsOf(tool);
  return Math.ceil(chars / CHARS_PER_TOKEN) + PER_MESSAGE * messages.length;
}
