// Where a compression pass cuts a transcript, and what the summarizer is asked: pure functions over
// the durable transcript. The head (first exchange) and a tail of recent turns stay word for word;
// cuts fall only where no tool call would be separated from its result.
import { type ChatMessage, contentText } from "../llm/provider.js";
import type { RouteRequest } from "../llm/router.js";
import { estimateTokens } from "../llm/tokens.js";
import type { MessageView } from "../store/rows.js";
import { type Compaction, toChatMessage } from "./history.js";

export interface CompressionPlan {
  head_until_seq: number;
  /** The new end of the middle; the tail starts after it. */
  middle_until_seq: number;
  /** Conversation messages in the whole middle, an earlier compacted stretch included. */
  messages: number;
  /** First seq of the middle (just after the head). */
  first_seq: number;
  /** Messages moved into the middle by this pass, in order (not in any summary yet). */
  fresh: MessageView[];
  /** The compaction this pass extends, or null for the first one. */
  previous: Compaction | null;
  /** Seq of the first message of the tail. */
  tail_from_seq: number;
}

const CONVERSATION_ROLES = new Set(["user", "assistant", "tool", "system"]);

/**
 * The cut for a pass, or null when there is nothing new to compress (no second exchange yet, or
 * everything after the earlier middle already belongs to the tail). `tailBudget` is the size in
 * tokens the tail should stay within; a tail of whole turns is preferred, and a cut inside the
 * last turn (at an assistant message whose tool calls are all answered) is taken only when that
 * turn alone is larger than the budget.
 */
export function planCompaction(
  transcript: readonly MessageView[],
  previous: Compaction | null,
  tailBudget: number,
): CompressionPlan | null {
  const conv = transcript.filter((m) => CONVERSATION_ROLES.has(m.role)).sort((a, b) => a.seq - b.seq);
  const headUntil = previous ? previous.head_until_seq : firstExchangeEnd(conv);
  if (headUntil === null) return null;
  const hiddenUntil = previous ? Math.max(previous.middle_until_seq, headUntil) : headUntil;
  const h = conv.findIndex((m) => m.seq > headUntil);
  const v = conv.findIndex((m) => m.seq > hiddenUntil);
  if (h < 0 || v < 0) return null;

  const cuttable = cutPoints(conv);
  const suffix = suffixTokens(conv);
  // A cut at i: the middle gets conv[v..i) (at least one new message), the tail conv[i..] (never empty).
  const candidates: number[] = [];
  for (let i = v + 1; i < conv.length; i++) if (cuttable[i]) candidates.push(i);
  const fits = (i: number) => (suffix[i] ?? 0) <= tailBudget;
  const cut =
    candidates.find((i) => conv[i]?.role === "user" && fits(i)) ?? candidates.find(fits) ?? candidates.at(-1);
  if (cut === undefined) return null;

  const middleEnd = conv[cut - 1];
  const tailStart = conv[cut];
  const first = conv[h];
  if (!middleEnd || !tailStart || !first) return null;
  return {
    head_until_seq: headUntil,
    middle_until_seq: middleEnd.seq,
    messages: cut - h,
    first_seq: first.seq,
    fresh: conv.slice(v, cut),
    previous,
    tail_from_seq: tailStart.seq,
  };
}

/** The last seq of the first exchange: everything before the second user message. */
function firstExchangeEnd(conv: readonly MessageView[]): number | null {
  const first = conv.findIndex((m) => m.role === "user");
  if (first < 0) return null;
  const second = conv.findIndex((m, i) => i > first && m.role === "user");
  if (second < 1) return null;
  return conv[second - 1]?.seq ?? null;
}

/**
 * Whether the transcript may be cut before each message: at a user message, or at an assistant or
 * system message, and never anywhere between a tool call and a result that answers it (a result
 * separated from its call is refused by providers and dropped by buildHistory).
 */
function cutPoints(conv: readonly MessageView[]): boolean[] {
  const ok = conv.map((m) => m.role === "user" || m.role === "assistant" || m.role === "system");
  const calledAt = new Map<string, number>();
  conv.forEach((m, i) => {
    if (m.role === "assistant") for (const id of callIds(m)) calledAt.set(id, i);
    if (m.role !== "tool" || m.tool_call_id === null) return;
    const at = calledAt.get(m.tool_call_id);
    if (at === undefined) return;
    for (let k = at + 1; k <= i; k++) ok[k] = false;
  });
  return ok;
}

function callIds(message: MessageView): string[] {
  const chat = toChatMessage(message);
  return chat?.role === "assistant" ? (chat.tool_calls ?? []).map((c) => c.id) : [];
}

function suffixTokens(conv: readonly MessageView[]): number[] {
  const out = new Array<number>(conv.length + 1).fill(0);
  for (let i = conv.length - 1; i >= 0; i--) {
    const message = conv[i];
    const chat = message ? toChatMessage(message) : null;
    out[i] = (out[i + 1] ?? 0) + (chat ? estimateTokens([chat]) : 0);
  }
  return out;
}

/** A message longer than this is shown to the summarizer shortened in its middle. */
const MAX_CHARS_PER_MESSAGE = 6_000;

const INSTRUCTIONS = `You write the working memory of an AI agent. Part of its conversation with a user (including the tools it ran and what they returned) no longer fits in its context, and your summary will stand in for that part from now on.

Write a dense, factual summary that lets the agent carry on without the original text. Keep:
- what the user asked for, their goals, constraints and preferences, in their own terms where it matters;
- decisions taken and the reasons given;
- concrete details: file paths, commands, names, identifiers, numbers, versions, URLs, error messages;
- what the tools found or changed;
- what is finished, what is still open, and anything the agent promised to do.

Leave out greetings, repetition and anything superseded later in the same part. Invent nothing. Do not continue the conversation, do not answer the user, do not add advice. Reply with the summary only, as short paragraphs or bullet points.`;

/** The summarizer's request for a plan: the instructions, the earlier summary, the new messages. */
export function summaryRequest(plan: CompressionPlan, maxOutputTokens: number): RouteRequest {
  const names = toolNames(plan.fresh);
  const parts: string[] = [];
  const previous = plan.previous;
  if (previous?.summary) {
    parts.push(
      `This part continues from an earlier summary of ${previous.messages} messages. Your summary replaces both, so carry everything still relevant from it:\n<earlier-summary>\n${previous.summary}\n</earlier-summary>`,
    );
  } else if (previous) {
    parts.push(
      `Before this part, ${previous.messages} messages were dropped without a summary; mention that in one line.`,
    );
  }
  parts.push(
    `Summarize these ${plan.fresh.length} messages:\n<conversation>\n${plan.fresh
      .map((m) => render(m, names))
      .filter((line) => line !== "")
      .join("\n\n")}\n</conversation>`,
  );
  const messages: ChatMessage[] = [
    { role: "system", content: INSTRUCTIONS },
    { role: "user", content: parts.join("\n\n") },
  ];
  return { messages, max_output_tokens: maxOutputTokens };
}

function toolNames(messages: readonly MessageView[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) {
    const chat = toChatMessage(m);
    if (chat?.role === "assistant") for (const call of chat.tool_calls ?? []) names.set(call.id, call.name);
  }
  return names;
}

function render(message: MessageView, names: ReadonlyMap<string, string>): string {
  const chat = toChatMessage(message);
  if (!chat) return "";
  switch (chat.role) {
    case "user":
      return `[user] ${clip(contentText(chat.content))}`;
    case "system":
      return `[system] ${clip(chat.content)}`;
    case "assistant": {
      const lines = chat.content ? [`[assistant] ${clip(chat.content)}`] : [];
      for (const call of chat.tool_calls ?? []) {
        lines.push(`[assistant calls ${call.name}] ${clip(call.arguments)}`);
      }
      return lines.join("\n") || "[assistant] (no text)";
    }
    case "tool": {
      const name = message.name ?? names.get(chat.tool_call_id) ?? "a tool";
      return `[result of ${name}] ${clip(chat.content)}`;
    }
    default: {
      const never: never = chat;
      return String(never);
    }
  }
}

function clip(text: string): string {
  if (text.length <= MAX_CHARS_PER_MESSAGE) return text;
  const head = Math.floor(MAX_CHARS_PER_MESSAGE * 0.7);
  const tail = MAX_CHARS_PER_MESSAGE - head;
  return `${text.slice(0, head)}\n[... ${text.length - head - tail} characters left out ...]\n${text.slice(-tail)}`;
}
