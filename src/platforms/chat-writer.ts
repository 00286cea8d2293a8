// The chat service's writes: an inbox entry marked done together with what its chat is told
// (each text cut by the adapter's split, one outbox entry per platform message) and the session
// record's update, in one store write; and the writes making a chat's new session.
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import type { PlatformAdapter, TextFormat } from "./adapter.js";
import type { ChatHost } from "./chat-host.js";
import { type ChatSession, chatSessionOp, readChatSession } from "./chat-sessions.js";
import { type DoneResult, doneOp, type InboxEntry } from "./inbox.js";
import type { ChatOutbox } from "./outbox-channel.js";
import { type EnqueueInput, outboxEntryOp } from "./outbox-records.js";

export interface ChatWriterDeps {
  store: StorePort;
  outbox: ChatOutbox;
  host: ChatHost;
  adapters: ReadonlyMap<string, PlatformAdapter>;
  now(): number;
  /** Wait before a write is tried again; false when the service stops meanwhile. */
  wait(ms: number): Promise<boolean>;
  retryMs: number;
  /** Told of a write refused (and tried again), and of each chat's failure. */
  fail(platform: string, error: unknown): void;
  noteError(platform: string, message: string): void;
}

export class ChatWriter {
  constructor(private readonly d: ChatWriterDeps) {}

  /**
   * Mark an entry done, with the texts (or ready outbox entries) its chat gets and other writes,
   * in one store write; the session record's running mark for the entry is cleared there, and a
   * failure (`error`) kept as the chat's last error. Tried three times when the store refuses.
   */
  async commit(
    entry: InboxEntry,
    done: DoneResult,
    texts: readonly (string | EnqueueInput)[],
    extra: readonly WriteOp[] = [],
    error: string | null = null,
    format: TextFormat = "plain",
  ): Promise<void> {
    const { store } = this.d;
    const now = this.d.now();
    const ops: WriteOp[] = [doneOp(entry, done, now), ...extra];
    const record = await readChatSession(store, entry.session_key);
    if (record !== null && (record.running?.inbox_key === entry.key || error !== null)) {
      const running = record.running?.inbox_key === entry.key ? null : record.running;
      const failed = error === null ? {} : { last_error: error, last_error_at: now };
      ops.push(chatSessionOp({ ...record, running, ...failed }, now).op);
    }
    let n = 0;
    for (const text of texts) {
      for (const input of typeof text === "string" ? this.say(entry, text, format, n) : [text]) {
        ops.push(outboxEntryOp(input, now).op);
        n++;
      }
    }
    if (error !== null) this.d.noteError(entry.platform, error);
    // An answer is worth a short wait: a store that refused a write often takes the next one.
    for (let attempt = 1; ; attempt++) {
      try {
        await store.write(ops);
        break;
      } catch (e) {
        if (attempt >= 3) throw e;
        this.d.fail(entry.platform, e);
        await this.d.wait(this.d.retryMs * attempt);
      }
    }
    void this.d.outbox.kick();
  }

  /** A text to an entry's chat as outbox entries, one per platform message. */
  say(entry: InboxEntry, text: string, format: TextFormat, from = 0): EnqueueInput[] {
    const event = entry.event;
    const parts = this.d.adapters.get(entry.platform)?.split?.(text, format) ?? [text];
    // In a group each user has a session: the answer quotes the message it answers.
    const replyTo = event.type !== "button" && event.chat_type === "group" ? event.message_id : undefined;
    return parts.map((part, i) => ({
      message: {
        type: "send",
        chat: event.chat,
        text: part,
        format,
        ...(i === 0 && replyTo !== undefined ? { reply_to: replyTo } : {}),
      },
      id: `ans/${entry.update_id}/${from + i}`,
      origin: `inbox:${entry.key}`,
    }));
  }

  /** The writes making a new session for the entry's key; `running` keeps an old turn's mark (/new). */
  async newSession(
    entry: InboxEntry,
    running: ChatSession["running"] = null,
  ): Promise<{ record: ChatSession; ops: WriteOp[] }> {
    const event = entry.event;
    const who = event.user.name === "" ? `user ${event.user.id}` : event.user.name;
    const where = event.chat_type === "group" ? `group ${event.chat.chat_id}, ${who}` : who;
    const thread = event.chat.thread_id === null ? "" : `, thread ${event.chat.thread_id}`;
    const { id, op } = this.d.host.newSessionOp({
      title: `${entry.platform}: ${where}${thread}`,
      source: entry.platform,
    });
    const now = this.d.now();
    // Never stamped older than the record it replaces (a put with an older stamp is ignored).
    const before = await readChatSession(this.d.store, entry.session_key);
    const { record, op: put } = chatSessionOp(
      {
        session_key: entry.session_key,
        platform: entry.platform,
        chat_key: entry.chat_key,
        chat: event.chat,
        session_id: id,
        created_at: now,
        updated_at: Math.max(now, before?.updated_at ?? now),
        running,
        last_error: null,
        last_error_at: null,
      },
      now,
    );
    return { record, ops: [op, put] };
  }
}
