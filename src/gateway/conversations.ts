// Stateless clients keep one session per conversation. Each gateway session keeps a fingerprint
// of its conversation as its client sees it (a hash chain over the user and assistant messages:
// each question and the turn's whole reply), updated after every completed turn and indexed in
// the store, so a request whose earlier messages hash to it continues that session in one lookup.
// A new conversation's session is titled in the background by auxiliary.title, when one is set;
// until then (and without one) every surface shows its first message as its title.
import { createHash } from "node:crypto";
import type { ModelRouter } from "../llm/router.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
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
   * What a completed turn's end also commits: the session's conversation now ends with the
   * question and the reply. `base` is the fingerprint of the conversation before it (undefined:
   * the session's stored one; a session that never had one, made outside the gateway, is not
   * tracked).
   */
  async turnWrites(sessionId: string, text: string, reply: string, base?: string | null): Promise<WriteOp[]> {
    const before = base === undefined ? await this.options.store.conversationHash(sessionId) : base;
    if (base === undefined && before === null) return [];
    const hash = conversationHash(before, [
      { role: "user", content: text },
      { role: "assistant", content: reply },
    ]);
    return [{ op: "session.update", id: sessionId, conversation_hash: hash, updated_at: this.options.now() }];
  }

  /**
   * Title a new conversation's session in the background with auxiliary.title; the reply never
   * waits for it. Without a title model nothing is written: every surface shows the first message
   * as the title of an untitled session (session-title.ts), and a title model that fails or is
   * too slow leaves it so.
   */
  title(sessionId: string, firstMessage: string): void {
    if (!this.options.titleModel || this.stop.signal.aborted) return;
    const task = this.makeTitle(firstMessage)
      .then((title) =>
        title === null
          ? undefined
          : this.options.store.write([
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

  /** Stop making titles (they stay untitled: the first message shows) and wait for the writes. */
  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all([...this.titling]);
  }

  /** The title model's title; null when it failed, was stopped or said nothing usable. */
  private async makeTitle(firstMessage: string): Promise<string | null> {
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
      return completion ? cleanTitle(completion.text) : null;
    } catch {
      return null;
    }
  }
}
