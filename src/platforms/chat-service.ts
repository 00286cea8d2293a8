// The chat service: inbound platform events become agent turns, and their answers outbox entries.
// - Only allowed users reach it: a stranger's update is acknowledged, nothing of it is stored or
//   run, and their chat gets one polite refusal per process.
// - Every other update is committed to the inbox before the sink resolves (the adapter then acks).
// - Each session key's messages run one turn at a time in arrival order (chat-lanes.ts); a turn's
//   answer is queued in the outbox in the same store write as the inbox entry's done mark, so a
//   crash can neither lose nor double it. Commands and buttons run inline (chat-commands.ts).
// - The gateway calls shutdownNotice before its drain, resumed() for each chat turn it resumed
//   after a crash, then recover() (chat-recover.ts) to run what the inbox still holds.
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { errorMessage } from "../core/errors.js";
import type { WriteOp } from "../store/ops.js";
import type { Store } from "../store/store.js";
import type {
  ChatRef,
  InboundButton,
  InboundEvent,
  InboundSink,
  PlatformAdapter,
  TextFormat,
} from "./adapter.js";
import { type CommandContext, runInline } from "./chat-commands.js";
import { BUSY_CODES, type ChatHost, errorCode, STOPPING_CODES } from "./chat-host.js";
import { enqueue, type Lane, type LaneItem, newLane } from "./chat-lanes.js";
import { type RecoverReport, recoverInbox } from "./chat-recover.js";
import { type ChatSession, chatSessionOp, listChatSessions, readChatSession } from "./chat-sessions.js";
import {
  approvalMessage,
  BACK_ONLINE,
  refusal,
  SHUTDOWN_RESTARTING,
  SHUTDOWN_STOPPING,
  startFailed,
  turnAnswer,
} from "./chat-texts.js";
import { type DoneResult, doneOp, type InboxEntry, PlatformInbox } from "./inbox.js";
import type { PlatformOutbox } from "./outbox.js";
import type { PlatformBacklog } from "./outbox-backlog.js";
import { type EnqueueInput, outboxEntryOp } from "./outbox-records.js";
import { chatKey } from "./session-key.js";

export interface ChatServiceOptions {
  store: Store;
  host: ChatHost;
  /** The adapters of this process: typing, button answers and notices go through them directly. */
  adapters: readonly PlatformAdapter[];
  outbox: PlatformOutbox;
  /** Per platform, the user ids whose updates reach the agent (`platforms.NAME.allowed_users`). */
  allowedUsers: Readonly<Record<string, readonly string[]>>;
  inbox?: PlatformInbox;
  now?: () => number;
  /** How often the typing indicator is sent while a turn runs (ms); default 4 s. */
  typingEveryMs?: number;
  /** The wait before trying a start again when the host is full (ms); default 1 s. */
  busyRetryMs?: number;
  /** Told of each failure the service keeps going past (a write refused, a start that failed). */
  onError?: (platform: string, message: string) => void;
}

/** One platform's part of /health and `tenax status`. */
export interface PlatformChatStatus {
  last_update_at: number | null;
  /** Sessions with a turn running now. */
  running: number;
  /** Messages waiting behind them. */
  waiting: number;
  outbox: PlatformBacklog;
  last_error: string | null;
}

const emptyBacklog = (): PlatformBacklog => ({
  pending: 0,
  given_up: 0,
  oldest_pending_at: null,
  last_error: null,
});

export class ChatService {
  /** Hand this to each adapter's start(). */
  readonly sink: InboundSink = (event) => this.receive(event);
  readonly inbox: PlatformInbox;
  private readonly store: Store;
  private readonly host: ChatHost;
  private readonly outbox: PlatformOutbox;
  private readonly now: () => number;
  private readonly adapters = new Map<string, PlatformAdapter>();
  private readonly allowed = new Map<string, Set<string>>();
  private readonly lanes = new Map<string, Lane>();
  /** Chats told they are not allowed, this process. */
  private readonly refused = new Set<string>();
  /** Chats told "back online", this process. */
  private readonly welcomed = new Set<string>();
  /** Resumed turns handed over by the gateway, by session id, until recover() takes them. */
  private readonly handover = new Map<string, Promise<TurnResult>>();
  private readonly notices: Promise<unknown>[] = [];
  private readonly work = new Set<Promise<unknown>>();
  private readonly typing = new Set<() => void>();
  private readonly lastUpdate: Record<string, number> = {};
  private readonly lastError: Record<string, string> = {};
  private readonly stopping = new AbortController();
  private readonly context: CommandContext;

  constructor(private readonly options: ChatServiceOptions) {
    this.store = options.store;
    this.host = options.host;
    this.outbox = options.outbox;
    this.now = options.now ?? Date.now;
    this.inbox = options.inbox ?? new PlatformInbox({ store: options.store, now: this.now });
    for (const a of options.adapters) this.adapters.set(a.name, a);
    for (const [platform, users] of Object.entries(options.allowedUsers))
      this.allowed.set(platform, new Set(users));
    this.context = {
      store: this.store,
      host: this.host,
      now: this.now,
      inbox: this.inbox,
      lane: (entry) => this.lanes.get(entry.session_key) ?? null,
      newSession: (entry, running) => this.newSession(entry, running),
      commit: (entry, done, texts, extra) => this.commit(entry, done, texts, extra),
      dispatch: (entry) => this.dispatch(entry),
      answerButton: (event, text) => this.answerButton(event, text),
    };
  }

  /** Commit an allowed user's update and start what it asks; refuse a stranger's. */
  private async receive(event: InboundEvent): Promise<void> {
    const platform = event.chat.platform;
    this.lastUpdate[platform] = this.now();
    if (this.allowed.get(platform)?.has(event.user.id) !== true) return this.refuse(event);
    const { created, entry } = await this.inbox.accept(event);
    // A redelivery: the first delivery runs it (or ran it); a restart's recover() runs what waits.
    if (!created) return;
    this.dispatch(entry);
  }

  /** Queue a message on its lane, or run a command or button press inline. */
  private dispatch(entry: InboxEntry): void {
    if (this.stopping.signal.aborted) return;
    if (entry.event.type !== "message") {
      this.track(runInline(this.context, entry)).catch((error) => this.fail(entry.platform, error));
      return;
    }
    const lane = this.laneOf(entry);
    enqueue(lane, { entry });
    this.pump(lane);
  }

  private laneOf(entry: InboxEntry): Lane {
    const known = this.lanes.get(entry.session_key);
    if (known) return known;
    const lane = newLane(entry);
    this.lanes.set(lane.key, lane);
    return lane;
  }

  private async refuse(event: InboundEvent): Promise<void> {
    if (event.type === "button")
      await this.answerButton(event, "Not allowed: this bot answers only its allowed users.");
    const key = chatKey(event.chat);
    if (this.refused.has(key)) return;
    this.refused.add(key);
    try {
      const text = refusal(event.chat.platform, event.user.id);
      await this.outbox.enqueue({
        message: { type: "send", chat: event.chat, text, format: "plain" },
        origin: "refusal",
      });
    } catch (error) {
      this.refused.delete(key);
      this.fail(event.chat.platform, error);
    }
  }

  /** Work a lane's queue, one turn at a time, unless a pump already does. */
  private pump(lane: Lane): void {
    if (lane.pumping !== null || this.stopping.signal.aborted) return;
    lane.pumping = this.track(
      (async () => {
        try {
          for (let item = lane.queue.shift(); item !== undefined; item = lane.queue.shift()) {
            if (this.stopping.signal.aborted) return;
            await this.run(lane, item);
          }
        } finally {
          lane.current = null;
          lane.pumping = null;
        }
      })(),
    );
  }

  /** One message's turn, from its session to its answer. Never throws: a failure is told and kept. */
  private async run(lane: Lane, item: LaneItem): Promise<void> {
    const { entry } = item;
    if (entry.event.type !== "message") return;
    try {
      if (item.resumed !== undefined) {
        const record = readChatSession(this.store, entry.session_key);
        const sessionId = record?.running?.session_id ?? record?.session_id ?? "";
        lane.current = { entry, sessionId, startedAt: this.now() };
        await this.settle(lane, entry, sessionId, item.resumed);
        return;
      }
      const start = await this.startTurn(lane, entry, entry.event.text);
      if (start === null) return;
      await this.settle(lane, entry, start.sessionId, start.result);
    } catch (error) {
      this.fail(entry.platform, error);
    } finally {
      lane.current = null;
    }
  }

  /**
   * Mark the turn as running in the chat's session record (made on first use), then start it,
   * trying again while the host is full. Null when it was not started: answered already (the host
   * refused it), or left pending for the next start (the host is stopping).
   */
  private async startTurn(
    lane: Lane,
    entry: InboxEntry,
    text: string,
  ): Promise<{ sessionId: string; result: Promise<TurnResult> } | null> {
    for (let fresh = false; ; ) {
      const now = this.now();
      const known = fresh ? null : readChatSession(this.store, entry.session_key);
      const made = known === null ? this.newSession(entry) : { record: known, ops: [] };
      const sessionId = made.record.session_id;
      const turnsBefore = this.store.getTurns(sessionId).length;
      const marked = chatSessionOp(
        {
          ...made.record,
          running: { inbox_key: entry.key, session_id: sessionId, turns_before: turnsBefore, at: now },
        },
        now,
      );
      await this.store.write([...made.ops, marked.op]);
      lane.current = { entry, sessionId, startedAt: now };
      try {
        const started = await this.host.start({
          sessionId,
          text,
          onEvent: (event) => this.onTurnEvent(lane.chat, event),
          requestedBy: `${entry.platform} chat ${entry.event.chat.chat_id}`,
        });
        return { sessionId, result: started.result };
      } catch (error) {
        const code = errorCode(error);
        if (code !== null && STOPPING_CODES.includes(code)) return null;
        if (code !== null && BUSY_CODES.includes(code)) {
          if (!(await this.wait(this.options.busyRetryMs ?? 1_000))) return null;
          continue;
        }
        if (code === "session_not_found" && !fresh) {
          // The session was deleted (the API, the dashboard): the chat goes on in a new one.
          fresh = true;
          continue;
        }
        const why = errorMessage(error);
        await this.commit(
          entry,
          { session_id: sessionId, turn_id: null, note: "not started" },
          [startFailed(why)],
          [],
          why,
        );
        return null;
      }
    }
  }

  /** Wait for the turn and commit its answer; a turn cut by the shutdown stays pending for the resume. */
  private async settle(
    lane: Lane,
    entry: InboxEntry,
    sessionId: string,
    result: Promise<TurnResult>,
  ): Promise<void> {
    const stopTyping = this.startTyping(lane.chat);
    let ended: TurnResult;
    try {
      ended = await result;
    } catch (error) {
      const why = errorMessage(error);
      const text = `Tenax could not answer (agent layer): the turn threw: ${why}. Send /retry to try again.`;
      await this.commit(entry, { session_id: sessionId, turn_id: null, note: "turn threw" }, [text], [], why);
      return;
    } finally {
      stopTyping();
    }
    if (ended.status === "interrupted" && ended.failure?.code === "shutting_down") return;
    const error =
      ended.status === "completed" ? null : (ended.failure?.message ?? ended.error ?? ended.status);
    await this.commit(
      entry,
      { session_id: ended.session_id, turn_id: ended.turn_id },
      [turnAnswer(ended)],
      [],
      error,
      ended.status === "completed" ? "markdown" : "plain",
    );
  }

  /**
   * Mark an entry done, with the texts it gets in its chat (each cut by the adapter's split) and
   * other writes, in one store write; the session record's running mark for it is cleared there.
   */
  private async commit(
    entry: InboxEntry,
    done: DoneResult,
    texts: readonly (string | EnqueueInput)[],
    extra: readonly WriteOp[],
    error: string | null = null,
    format: TextFormat = "plain",
  ): Promise<void> {
    const now = this.now();
    const ops: WriteOp[] = [doneOp(entry, done, now), ...extra];
    const record = readChatSession(this.store, entry.session_key);
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
    if (error !== null) this.lastError[entry.platform] = error;
    await this.store.write(ops);
    void this.outbox.kick();
  }

  /** A text to an entry's chat as outbox entries, one per platform message. */
  private say(entry: InboxEntry, text: string, format: TextFormat, from: number): EnqueueInput[] {
    const event = entry.event;
    const parts = this.adapters.get(entry.platform)?.split?.(text, format) ?? [text];
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
  private newSession(
    entry: InboxEntry,
    running: ChatSession["running"] = null,
  ): { record: ChatSession; ops: WriteOp[] } {
    const event = entry.event;
    const who = event.user.name === "" ? `user ${event.user.id}` : event.user.name;
    const where = event.chat_type === "group" ? `group ${event.chat.chat_id}, ${who}` : who;
    const thread = event.chat.thread_id === null ? "" : `, thread ${event.chat.thread_id}`;
    const { id, op } = this.host.newSessionOp({
      title: `${entry.platform}: ${where}${thread}`,
      source: entry.platform,
    });
    const now = this.now();
    // Never stamped older than the record it replaces (a put with an older stamp is ignored).
    const before = readChatSession(this.store, entry.session_key);
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

  private onTurnEvent(chat: ChatRef, event: AgentEvent): void {
    if (event.type !== "approval_requested") return;
    const id = event.approval_id;
    const message = {
      type: "send" as const,
      chat,
      text: approvalMessage(event),
      format: "plain" as const,
      buttons: [
        [
          { text: "Approve", data: `apr:${id}:y` },
          { text: "Deny", data: `apr:${id}:n` },
        ],
      ],
    };
    // A resumed turn asks again for the same record: the same id is recognised and not sent twice.
    this.track(this.outbox.enqueue({ message, id: `apr/${id}`, origin: `approval:${id}` })).catch((error) =>
      this.fail(chat.platform, error),
    );
  }

  /** Send the typing indicator now and every few seconds until stopped; failures are ignored. */
  private startTyping(chat: ChatRef): () => void {
    const adapter = this.adapters.get(chat.platform);
    if (adapter === undefined) return () => undefined;
    const every = this.options.typingEveryMs ?? 4_000;
    const send = () => {
      try {
        void adapter.perform({ type: "typing", chat }, AbortSignal.timeout(every)).catch(() => undefined);
      } catch {
        // Best effort: the indicator is never worth a failure.
      }
    };
    send();
    const timer = setInterval(send, every);
    timer.unref();
    const stop = () => {
      clearInterval(timer);
      this.typing.delete(stop);
    };
    this.typing.add(stop);
    return stop;
  }

  /** Answer a button press at once (not through the outbox: the platform forgets it soon). */
  private async answerButton(event: InboundButton, text: string): Promise<void> {
    await this.direct({ type: "answer", callback_id: event.callback_id, text }, event.chat.platform, 5_000);
  }

  /** One attempt at an op, bounded by `timeoutMs`; whether it went through. Never throws. */
  private async direct(
    op: Parameters<PlatformAdapter["perform"]>[0],
    platform: string,
    timeoutMs: number,
  ): Promise<boolean> {
    const adapter = this.adapters.get(platform);
    if (adapter === undefined) return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      const sent = adapter.perform(op, AbortSignal.timeout(timeoutMs)).then(
        (r) => r.ok,
        () => false,
      );
      return await Promise.race([sent, late]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Before the drain: one message to each chat with a running turn, however many of its sessions
   * run; one attempt each, all within `timeoutMs`. Never throws; says how many were sent.
   */
  async shutdownNotice(options: {
    restarting: boolean;
    timeoutMs: number;
  }): Promise<{ chats: number; sent: number }> {
    try {
      const chats = new Map<string, ChatRef>();
      for (const lane of this.lanes.values())
        if (lane.current !== null && !chats.has(lane.chatKey)) chats.set(lane.chatKey, lane.chat);
      const text = options.restarting ? SHUTDOWN_RESTARTING : SHUTDOWN_STOPPING;
      const sent = await Promise.all(
        [...chats.values()].map((chat) =>
          this.direct({ type: "send", chat, text, format: "plain" }, chat.platform, options.timeoutMs),
        ),
      );
      return { chats: chats.size, sent: sent.filter(Boolean).length };
    } catch {
      return { chats: 0, sent: 0 };
    }
  }

  /**
   * A chat turn the gateway resumed after a crash (call before recover()): its chat is told
   * "back online" once, and recover() answers the message it was running with its result.
   * False when the session is no chat's running turn.
   */
  resumed(sessionId: string, result: Promise<TurnResult>): boolean {
    const record = listChatSessions(this.store).find((r) => r.running?.session_id === sessionId);
    if (record === undefined) return false;
    result.catch(() => undefined);
    this.handover.set(sessionId, result);
    if (!this.welcomed.has(record.chat_key)) {
      this.welcomed.add(record.chat_key);
      const message = {
        type: "send" as const,
        chat: record.chat,
        text: BACK_ONLINE,
        format: "plain" as const,
      };
      this.notices.push(
        this.outbox
          .enqueue({ message, origin: "notice:back_online" })
          .catch((e) => this.fail(record.platform, e)),
      );
    }
    return true;
  }

  /** The events of a resumed chat turn, for its approvals to reach the chat; undefined for no chat's. */
  eventsFor(sessionId: string): ((event: AgentEvent) => void) | undefined {
    const record = listChatSessions(this.store).find((r) => r.running?.session_id === sessionId);
    return record === undefined ? undefined : (event) => this.onTurnEvent(record.chat, event);
  }

  /** At start: run what the inbox holds, in arrival order, and answer the resumed turns. */
  async recover(): Promise<RecoverReport> {
    await Promise.all(this.notices.splice(0));
    const report = await recoverInbox({
      store: this.store,
      pending: this.inbox.pending().filter((e) => this.adapters.has(e.platform)),
      handover: this.handover,
      inline: (entry) => runInline(this.context, entry),
      queue: (item) => enqueue(this.laneOf(item.entry), item),
      answer: (entry, done, text, error) =>
        this.commit(entry, done, [text], [], error, error === null ? "markdown" : "plain"),
    });
    for (const lane of this.lanes.values()) this.pump(lane);
    return report;
  }

  /** Per platform: last update, turns running, messages waiting, the outbox's backlog, last error. */
  status(): Record<string, PlatformChatStatus> {
    const backlog = this.outbox.backlog();
    const out: Record<string, PlatformChatStatus> = {};
    for (const name of this.adapters.keys()) {
      const lanes = [...this.lanes.values()].filter((l) => l.platform === name);
      out[name] = {
        last_update_at: this.lastUpdate[name] ?? null,
        running: lanes.filter((l) => l.current !== null).length,
        waiting: lanes.reduce((n, l) => n + l.queue.length, 0),
        outbox: backlog[name] ?? emptyBacklog(),
        last_error: this.lastError[name] ?? null,
      };
    }
    return out;
  }

  /** Resolves once nothing started here is still working (for tests and a clean stop). */
  async idle(): Promise<void> {
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
  }

  /** Start nothing new; running turns are the host's to drain or interrupt (they stay pending). */
  stop(): void {
    this.stopping.abort();
    for (const stop of [...this.typing]) stop();
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.work.add(promise);
    void promise.finally(() => this.work.delete(promise)).catch(() => undefined);
    return promise;
  }

  /** Wait `ms` unless stopped; false when stopped. */
  private wait(ms: number): Promise<boolean> {
    const signal = this.stopping.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  private fail(platform: string, error: unknown): void {
    const message = errorMessage(error);
    this.lastError[platform] = message;
    try {
      this.options.onError?.(platform, message);
    } catch {
      // A broken listener never breaks the service.
    }
  }
}
