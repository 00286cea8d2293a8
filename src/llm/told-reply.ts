// What one model call's listener has been told of the reply in progress, kept across the attempts
// of its retries and the models of its fallback, and what a new attempt may add to it. A listener
// that can take text back (`tenax chat` redraws, a run's log drops it) is told to drop what it has
// (`stream_restart` with `discard_chars`) and gets the new attempt whole. One that cannot (an
// OpenAI client assembling a stream) is `appendOnly`: a new attempt is only ever a continuation.
// While it says again what was told, nothing is passed on; past that, only what is new; when it
// says something else, or ends short of it, the call fails with `reply_diverged`. Sound because
// the listener then ends with exactly one attempt's whole reply (the last one's), which is also
// the completion the caller stores; only ids, which a provider makes up anew each attempt, are
// kept as told.
import { type ClassifiedError, terminalClassified } from "./classified-error.js";
import type { ToolCall } from "./provider.js";
import type { RouteEvent } from "./route-events.js";

/** A reply so far: its text, tool calls by index (from their pieces), whole calls, log probabilities. */
interface Said {
  text: string;
  calls: Map<number, ToolCall>;
  whole: ToolCall[];
  logprobs: unknown[];
}

/** What the listener gets of one event: the event to pass on, nothing (held), or the divergence. */
export type Passed = { event: RouteEvent | null } | { diverged: ClassifiedError };

/** The completion's reply, as the provider ended it. */
export interface ReplyEnd {
  text: string;
  tool_calls: ToolCall[];
  logprobs?: unknown[];
}

const said = (): Said => ({ text: "", calls: new Map(), whole: [], logprobs: [] });

export class ToldReply {
  private told = said();
  /** The attempt in progress while it repeats a reply the listener has part of; null otherwise. */
  private replay: Said | null = null;

  constructor(readonly appendOnly: boolean) {}

  /** Whether the listener has any of the reply. */
  get any(): boolean {
    const t = this.told;
    return t.text !== "" || t.calls.size > 0 || t.whole.length > 0 || t.logprobs.length > 0;
  }

  /**
   * A new attempt starts (a retry, or the next model of the fallback chain). Returns how many
   * characters of text the listener drops: all it has when it can take text back (it then has
   * none), none when it is append-only (the attempt must then go on from what it has).
   */
  begin(): number {
    if (this.appendOnly) {
      this.replay = this.any ? said() : null;
      return 0;
    }
    const dropped = this.told.text.length;
    this.told = said();
    return dropped;
  }

  /** One event of the attempt in progress: what the listener is told of it. */
  pass(event: RouteEvent): Passed {
    switch (event.type) {
      case "text":
        return this.text(event.delta);
      case "tool_call_delta":
        return this.callPiece(event);
      case "tool_call":
        return this.wholeCall(event);
      case "logprobs":
        return this.logprobs(event.content);
      default:
        return { event };
    }
  }

  /**
   * The attempt ended with this reply: it as the listener has it (a call keeps the id the listener
   * was told, log probabilities are the ones it was sent), or the divergence when the attempt
   * ended short of what the listener has.
   */
  settle<R extends ReplyEnd>(end: R): R | { diverged: ClassifiedError } {
    // Without a restart caught up, the listener has this attempt's own reply.
    if (this.replay === null) return end;
    const t = this.told;
    if (!end.text.startsWith(t.text))
      return this.diverged(`its text ended after ${end.text.length} of the ${t.text.length} characters sent`);
    // A reply's calls come in the order of their indices (which need not start at 0).
    const order = this.callOrder();
    for (const [at, index] of order.entries()) {
      const call = t.calls.get(index);
      const now = end.tool_calls[at];
      if (
        call === undefined ||
        now === undefined ||
        now.name !== call.name ||
        !now.arguments.startsWith(call.arguments)
      )
        return this.diverged(`its tool call ${index} is not the one sent`);
    }
    if (t.whole.some((call, at) => !sameCall(call, end.tool_calls[at])))
      return this.diverged("its tool calls are not the ones sent");
    if (t.logprobs.length > (end.logprobs?.length ?? 0))
      return this.diverged("it has fewer log probabilities than were sent");
    this.replay = null;
    return {
      ...end,
      tool_calls: end.tool_calls.map((call, at) => ({ ...call, id: this.idAt(at) ?? call.id })),
      ...(t.logprobs.length > 0 ? { logprobs: [...t.logprobs] } : {}),
    };
  }

  private text(delta: string): Passed {
    const replay = this.replay;
    if (replay === null) {
      this.told.text += delta;
      return { event: { type: "text", delta } };
    }
    replay.text += delta;
    const fresh = beyond(this.told.text, replay.text);
    if (fresh === null) return this.diverged(`its text differs ${where(this.told.text, replay.text)}`);
    this.told.text += fresh;
    return { event: fresh === "" ? null : { type: "text", delta: fresh } };
  }

  private callPiece(event: Extract<RouteEvent, { type: "tool_call_delta" }>): Passed {
    const { index } = event;
    const piece = { id: event.id ?? "", name: event.name ?? "", arguments: event.arguments };
    const replay = this.replay;
    const told = this.told.calls.get(index);
    if (replay === null || told === undefined) {
      if (replay !== null) replay.calls.set(index, { ...piece });
      if (told === undefined) this.told.calls.set(index, { ...piece });
      else grow(told, piece);
      return { event };
    }
    const now = replay.calls.get(index) ?? { id: "", name: "", arguments: "" };
    grow(now, piece);
    replay.calls.set(index, now);
    const name = beyond(told.name, now.name);
    const args = beyond(told.arguments, now.arguments);
    if (name === null || args === null) return this.diverged(`its tool call ${index} is not the one sent`);
    told.name += name;
    told.arguments += args;
    if (name === "" && args === "") return { event: null };
    // The listener has the call's id: only the new part of it is sent.
    return { event: { type: "tool_call_delta", index, ...(name === "" ? {} : { name }), arguments: args } };
  }

  private wholeCall(event: Extract<RouteEvent, { type: "tool_call" }>): Passed {
    const call: ToolCall = { id: event.id, name: event.name, arguments: event.arguments };
    const index = this.replay === null ? this.told.whole.length : this.replay.whole.length;
    this.replay?.whole.push(call);
    const told = this.told.whole[index];
    if (told !== undefined) {
      if (!sameCall(told, call)) return this.diverged("its tool calls are not the ones sent");
      return { event: null };
    }
    // The id the listener was given with the call's pieces, if it was.
    const id = (this.replay === null ? null : this.idAt(index)) ?? call.id;
    this.told.whole.push({ ...call, id });
    return { event: { type: "tool_call", ...call, id } };
  }

  private logprobs(content: unknown[]): Passed {
    const replay = this.replay;
    if (replay === null) {
      this.told.logprobs.push(...content);
      return { event: { type: "logprobs", content } };
    }
    const fresh: unknown[] = [];
    for (const entry of content) {
      const at = replay.logprobs.push(entry) - 1;
      const told = this.told.logprobs[at];
      if (told === undefined) {
        fresh.push(entry);
        this.told.logprobs.push(entry);
      } else if (tokenOf(told) !== tokenOf(entry))
        return this.diverged(`its tokens differ from token ${at} of the log probabilities sent`);
    }
    return { event: fresh.length === 0 ? null : { type: "logprobs", content: fresh } };
  }

  /** The indices of the calls the listener has, in the order a reply lists its calls. */
  private callOrder(): number[] {
    return [...this.told.calls.keys()].sort((a, b) => a - b);
  }

  /** The id the listener has for the reply's call at this place, if it has one. */
  private idAt(at: number): string | null {
    const index = this.callOrder()[at];
    const id = index === undefined ? "" : (this.told.calls.get(index)?.id ?? "");
    return id === "" ? null : id;
  }

  private diverged(how: string): { diverged: ClassifiedError } {
    this.replay = null;
    return {
      diverged: terminalClassified(
        "reply_diverged",
        `the stream broke after part of the reply was sent (${summary(this.told)}), and the new attempt said something else: ${how}; what was sent cannot be taken back, so the reply ends here`,
      ),
    };
  }
}

/** What `now` adds past `had`: "" while it only repeats part of it, null once they differ. */
function beyond(had: string, now: string): string | null {
  if (now.length <= had.length) return had.startsWith(now) ? "" : null;
  return now.startsWith(had) ? now.slice(had.length) : null;
}

function where(had: string, now: string): string {
  let i = 0;
  while (i < had.length && i < now.length && had[i] === now[i]) i++;
  return `from character ${i} of the ${had.length} sent`;
}

function grow(call: ToolCall, piece: ToolCall): void {
  if (piece.id !== "") call.id = piece.id;
  call.name += piece.name;
  call.arguments += piece.arguments;
}

function sameCall(a: ToolCall, b: ToolCall | undefined): boolean {
  return b !== undefined && a.name === b.name && a.arguments === b.arguments;
}

/** A log probability entry is judged by its token: the numbers of a token may vary between runs. */
function tokenOf(entry: unknown): string {
  const token = (entry as { token?: unknown } | null)?.token;
  return typeof token === "string" ? token : JSON.stringify(entry);
}

function summary(told: Said): string {
  const parts = [`${told.text.length} characters of text`];
  const calls = Math.max(told.calls.size, told.whole.length);
  if (calls > 0) parts.push(`${calls} tool call${calls === 1 ? "" : "s"}`);
  return parts.join(" and ");
}
