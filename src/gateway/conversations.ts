// Stateless clients keep one session per conversation. Each gateway session keeps a fingerprint
// of its conversation as its client sees it (a hash chain over the user and assistant messages:
// each question and the turn's whole reply), updated after every completed turn and indexed in
// the store, so a request whose earlier messages hash to it continues that session in one lookup.
// A new conversation's session is titled in the background from its first message.
import { createHash } from "node:crypto";
import type { TurnResult } from "../agent/turn.js";
import type { ModelRouter } from "../llm/router.js";
import type { StorePort } from "../store/port.js";
import { plainTitle } from "../store/session-title.js";
import type { ChatMessage } from "./chat-request.js";

type Said = Pick<ChatMessage, "role" | "content">;

/** The conversation a client sent, as history: its system messages are not part of it. */
export function historyOf(messages: readonly ChatMessage[]): Said[] {
  return messages.filter((m) => m.role === "user" || m.role === "assistant");
}

/** The hash chain over `messages`, continuing from `base` (null: the empty conversation). */
export function conversationHash(base: string | null, messages: readonly Said[]): string {
  let hash = base ?? "";
  for (const m of messages)
    hash = createHash("sha256")
      .update(JSON.stringify([hash, m.role, m.content]))
      .digest("hex");
  return hash;
}

/** What a title model answered, as a title; null when nothing usable is left. */
export function cleanTitle(text: string): string | null {
  const first = text.trim().split("\n")[0] ?? "";
  const unquote = (t: string) => t.replace(/^["'“”«»]+|["'“”«».]+$/g, "").trim();
  const bare = unquote(unquote(first).replace(/^title:\s*/i, ""));
  if (bare === "") return null;
  return bare.length <= 80 ? bare : `${bare.slice(0, 79).trimEnd()}…`;
}

const TITLE_PROMPT =
  "Write a short title (at most 6 words) for a conversation that begins with the user's message below. Answer with the title alone: no quotes, no punctuation at the end.";

export interface ConversationsOptions {
  store: StorePort;
  router: Pick<ModelRouter, "auxiliary">;
  /** Whether auxiliary.title names a model; without one, titles are the plain first message. */
  titleModel: boolean;
  now: () => number;
}

export class Conversations {
  /** Titles being made; aborted when the gateway stops (they then fall back to the plain title). */
  private readonly titling = new Set<Promise<void>>();
  private readonly stop = new AbortController();

  constructor(private readonly options: ConversationsOptions) {}

  /** The session a stateless request continues: its earlier messages are that session's conversation. */
  async find(earlier: readonly ChatMessage[]): Promise<{ sessionId: string } | null> {
    const history = historyOf(earlier);
    if (history.length === 0) return null;
    const sessionId = await this.options.store.findConversation(conversationHash(null, history));
    return sessionId === null ? null : { sessionId };
  }

  /**
   * After a completed turn: the session's conversation now ends with the question and the reply.
   * `base` is the fingerprint of the conversation before it (undefined: the session's stored one;
   * a session that never had one, made outside the gateway, is not tracked).
   */
  async recordTurn(sessionId: string, text: string, result: TurnResult, base?: string | null): Promise<void> {
    if (result.status !== "completed") return;
    const store = this.options.store;
    const before = base === undefined ? await store.conversationHash(sessionId) : base;
    if (base === undefined && before === null) return;
    const hash = conversationHash(before, [
      { role: "user", content: text },
      { role: "assistant", content: result.reply },
    ]);
    await store.write([
      { op: "session.update", id: sessionId, conversation_hash: hash, updated_at: this.options.now() },
    ]);
  }

  /** Title a new conversation's session in the background; the reply never waits for it. */
  title(sessionId: string, firstMessage: string): void {
    const task = this.makeTitle(firstMessage)
      .then((title) =>
        this.options.store.write([
          { op: "session.update", id: sessionId, title, updated_at: this.options.now() },
        ]),
      )
      .then(
        () => undefined,
        // A store that refuses the write (closing, damaged) leaves the session untitled.
        () => undefined,
      );
    this.titling.add(task);
    void task.finally(() => this.titling.delete(task));
  }

  /** Stop making titles (their plain ones are written) and wait for the writes. */
  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all([...this.titling]);
  }

  private async makeTitle(firstMessage: string): Promise<string> {
    const plain = plainTitle(firstMessage);
    if (!this.options.titleModel || this.stop.signal.aborted) return plain;
    try {
      const completion = await this.options.router.auxiliary(
        "title",
        {
          messages: [
            { role: "system", content: TITLE_PROMPT },
            { role: "user", content: firstMessage.slice(0, 4000) },
          ],
          max_output_tokens: 32,
        },
        { signal: this.stop.signal },
      );
      return (completion && cleanTitle(completion.text)) ?? plain;
    } catch {
      return plain;
    }
  }
}
