// From the durable transcript to what the model is sent. The store keeps every original message
// forever; a compaction (a record beside the transcript) says which middle stretch the model sees
// as a summary, or as a visible note that it was dropped. Markers (interruptions, guardrail halts,
// compaction notes) are for people reading the transcript and are never sent as turns.
import type { ChatMessage, ToolCall } from "../llm/provider.js";
import type { MessageView } from "../store/rows.js";
import { storedToolCalls } from "../store/tool-calls.js";

/** The role of transcript entries that are Tenax's own notes, not part of the conversation. */
export const MARKER_ROLE = "marker";

/** The `name` of the user-role note that tells the model its interrupted turn goes on. */
export const RESUME_NAME = "tenax-resume";

export const COMPACTION_KIND = "compaction";

/** How a session's middle is replaced in what the model sees (kept as record COMPACTION_KIND/session). */
export interface Compaction {
  /** Messages with seq up to this stay as they are (the head: the first exchange). */
  head_until_seq: number;
  /** Messages after the head up to this seq are replaced by the summary. */
  middle_until_seq: number;
  /** The summary, or null when it could not be made and the middle was dropped. */
  summary: string | null;
  /** How many messages the middle held, for the note. */
  messages: number;
  created_at: number;
}

/** The model's view of a summarized or dropped middle. */
export function compactionNote(compaction: Compaction): string {
  return compaction.summary === null
    ? `[Tenax: ${compaction.messages} earlier messages of this conversation were dropped to fit the context window; no summary could be made. Ask the user if something from earlier is needed.]`
    : `[Tenax: summary of ${compaction.messages} earlier messages, replaced to fit the context window]\n${compaction.summary}`;
}

/** The model messages for a transcript: system prompt, head, compaction note, and the rest. */
export function buildHistory(
  transcript: readonly MessageView[],
  options: { system?: string | null; compaction?: Compaction | null } = {},
): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (options.system) out.push({ role: "system", content: options.system });
  const compaction = options.compaction ?? null;
  let noted = false;
  const resumedAt = lastResumes(transcript);
  for (const message of transcript) {
    if (compaction && message.seq > compaction.head_until_seq && message.seq <= compaction.middle_until_seq) {
      if (!noted) {
        out.push({ role: "user", content: compactionNote(compaction) });
        noted = true;
      }
      continue;
    }
    // A crash marker of a turn that was resumed after it is no unanswered question: the turn went on.
    const resumedLater = (resumedAt.get(message.turn_id ?? "") ?? -1) > message.seq;
    const converted = toChatMessage(message) ?? (resumedLater ? null : unansweredNote(message, out.at(-1)));
    if (converted) out.push(converted);
  }
  return mergeAdjacentUsers(pairToolResults(out));
}

/** Per turn, the seq of its last resume note (the user-role message named RESUME_NAME). */
function lastResumes(transcript: readonly MessageView[]): Map<string, number> {
  const at = new Map<string, number>();
  for (const m of transcript)
    if (m.role === "user" && m.name === RESUME_NAME && m.turn_id !== null) at.set(m.turn_id, m.seq);
  return at;
}

/** What the model sees for a tool call whose result was never stored (a crash or an interrupt). */
export const MISSING_RESULT = JSON.stringify({
  error: "no result: the turn was interrupted before this tool call finished",
});

/**
 * Every tool call must be answered before the conversation goes on, or providers refuse the
 * request. A call left without its result (the process died mid-tool) gets an explicit one.
 */
function pairToolResults(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let open: string[] = [];
  const close = () => {
    for (const id of open) out.push({ role: "tool", content: MISSING_RESULT, tool_call_id: id });
    open = [];
  };
  for (const message of messages) {
    if (message.role === "tool") {
      if (!open.includes(message.tool_call_id)) continue; // a result without its call: not sendable
      open = open.filter((id) => id !== message.tool_call_id);
      out.push(message);
      continue;
    }
    close();
    out.push(message);
    if (message.role === "assistant" && message.tool_calls) open = message.tool_calls.map((c) => c.id);
  }
  close();
  return out;
}

/** What the model sees where a turn ended before any reply to the question before it. */
export const UNANSWERED_NOTE = "[Tenax: this turn was interrupted before a reply; nothing was answered]";

/**
 * A turn that was interrupted or failed before its first reply leaves the question unanswered.
 * The model is told so in the assistant's place, rather than seeing two questions glued together.
 */
function unansweredNote(message: MessageView, previous: ChatMessage | undefined): ChatMessage | null {
  if (message.role !== MARKER_ROLE || previous?.role !== "user") return null;
  return /^turn (interrupted|failed)/.test(message.content ?? "")
    ? { role: "assistant", content: UNANSWERED_NOTE }
    : null;
}

/** One stored message as the model sees it; null for markers and rows that are not a turn. */
export function toChatMessage(message: MessageView): ChatMessage | null {
  const content = message.content ?? "";
  switch (message.role) {
    case "user":
      return { role: "user", content };
    case "system":
      return { role: "system", content };
    case "assistant": {
      const calls = toolCallsOf(message.tool_calls);
      return calls.length > 0
        ? { role: "assistant", content: message.content, tool_calls: calls }
        : { role: "assistant", content };
    }
    case "tool":
      return { role: "tool", content, tool_call_id: message.tool_call_id ?? "" };
    default:
      return null;
  }
}

/** A stored message's tool calls as the model sends them; a call without an id or a name is left out. */
export function toolCallsOf(raw: unknown[] | null): ToolCall[] {
  return storedToolCalls(raw).flatMap((call) =>
    call.id === null || call.name === null
      ? []
      : [{ id: call.id, name: call.name, arguments: call.arguments }],
  );
}

/**
 * Two user messages in a row (a compaction note before the next question, a turn interrupted
 * before its reply) become one, which every provider accepts.
 */
function mergeAdjacentUsers(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const message of messages) {
    const last = out.at(-1);
    if (last?.role === "user" && message.role === "user") {
      out[out.length - 1] = { role: "user", content: `${last.content}\n\n${message.content}` };
    } else {
      out.push(message);
    }
  }
  return out;
}
