// The dashboard's transcript: the stored messages, each tool result joined to the call it answers
// (in either stored shape, store/tool-calls.ts) and put in a few words by the summarizer `tenax chat` uses live (agent/tool-summary.ts):
// `terminal` `ls -la`: "3 lines". The page shows that line and keeps the arguments and the whole
// output one click away; every string stays the page's to escape.
import { isErrorResult, summarizeToolResult, toolTarget } from "../agent/tool-summary.js";
import type { MessageView } from "../store/rows.js";
import { type StoredToolCall, storedToolCalls } from "../store/tool-calls.js";

export interface ToolCallView {
  id: string | null;
  name: string;
  /** What it worked on (the command, the path), from its arguments. */
  target: string;
  /** The arguments as the model sent them. */
  arguments: string;
}

export interface ToolResultView {
  name: string;
  /** The call's target; "" when the call is not in the transcript. */
  target: string;
  /** The call's arguments; null when the call is not in the transcript. */
  arguments: string | null;
  ok: boolean;
  summary: string;
}

export type TranscriptMessage = MessageView & {
  /** On a tool message: its call and how it went, in a few words. */
  tool?: ToolResultView;
  /** On an assistant message: its calls that no tool message answers (the turn ended first). */
  unanswered?: ToolCallView[];
};

export function transcriptView(messages: readonly MessageView[]): TranscriptMessage[] {
  const calls = new Map<string, ToolCallView>();
  const answered = new Set<string>();
  for (const m of messages) {
    for (const call of storedToolCalls(m.tool_calls))
      if (call.id !== null) calls.set(call.id, callView(call));
    if (m.role === "tool" && m.tool_call_id !== null) answered.add(m.tool_call_id);
  }
  return messages.map((m): TranscriptMessage => {
    if (m.role === "tool") {
      const call = m.tool_call_id === null ? undefined : calls.get(m.tool_call_id);
      const name = m.name ?? call?.name ?? "tool";
      const content = m.content ?? "";
      const summary = summarizeToolResult(name, content, isErrorResult(content));
      return {
        ...m,
        tool: {
          name,
          target: call?.target ?? "",
          arguments: call?.arguments ?? null,
          ok: summary.ok,
          summary: summary.text,
        },
      };
    }
    if (m.tool_calls === null || m.tool_calls.length === 0) return m;
    const unanswered = storedToolCalls(m.tool_calls)
      .filter((call) => call.id === null || !answered.has(call.id))
      .map(callView);
    return unanswered.length === 0 ? m : { ...m, unanswered };
  });
}

function callView(call: StoredToolCall): ToolCallView {
  const name = call.name ?? "tool";
  return { id: call.id, name, target: toolTarget(name, call.arguments), arguments: call.arguments };
}
