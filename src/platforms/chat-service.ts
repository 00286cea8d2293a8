// The chat service: inbound platform events become agent turns, and their answers outbox entries.
// - Only allowed users reach it: a stranger's update is acknowledged, nothing of it is stored or
//   run, and their chat gets one polite refusal per process.
// - Every other update is committed to the inbox before the sink resolves (the adapter then acks).
// - Each session key's messages run one turn at a time in arrival order (chat-lanes.ts,
//   chat-turns.ts); a turn's answer is queued in the outbox in the same store write as the inbox
//   entry's done mark (chat-writer.ts), so a crash can neither lose nor double it. Commands and
//   buttons run inline (chat-commands.ts); typing and button answers skip the outbox (chat-direct.ts).
// - The gateway calls shutdownNotice before its drain, resumed() for each chat turn it resumed
//   after a crash, then recover() (chat-recover.ts) to run what the inbox still holds.
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { errorMessage } from "../core/errors.js";
import { emptyBacklog, type OutboxBacklog } from "../outbox/backlog.js";
import type { StorePort } from "../store/port.js";
import type { ChatRef, InboundEvent, InboundSink, PlatformAdapter } from "./adapter.js";
import { approvalClosed, approvalRequest, type CommandContext, runInline } from "./chat-commands.js";
import { PlatformDirect } from "./chat-direct.js";
import type { ChatHost } from "./chat-host.js";
import { enqueue, type Lane, newLane } from "./chat-lanes.js";
import { type RecoverReport, recoverInbox } from "./chat-recover.js";
import { listChatSessions } from "./chat-sessions.js";
import { BACK_ONLINE, refusal, SHUTDOWN_RESTARTING, SHUTDOWN_STOPPING } from "./chat-texts.js";
import { type LaneRunDeps, runLaneItem } from "./chat-turns.js";
import { ChatWriter } from "./chat-writer.js";
import { type InboxEntry, PlatformInbox } from "./inbox.js";
import type { ChatOutbox } from "./outbox-channel.js";
import type { EnqueueInput } from "./outbox-records.js";
import { chatKey } from "./session-key.js";

export interface ChatServiceOptions {
  store: StorePort;
  host: ChatHost;
  /** The adapters of this process: typing, button answers and notices go through them directly. */
  adapters: readonly PlatformAdapter[];
  outbox: ChatOutbox;
  /**
   * Per platform, the user ids whose updates reach the agent (`platforms.NAME.allowed_users`, as
   * strings), or "anyone" for a platform whose callers are checked before they reach the sink (the
   * webhook: the gateway key). A platform not named here reaches no one.
   */
  allowedUsers: Readonly<Record<string, readonly string[] | "anyone">>;
  inbox?: PlatformInbox;
  /**
   * Whether a running turn's lease owner still runs it (core/owners.ts): recover() leaves such a
   * message, and its session's later ones, until that turn ends. None: never.
   */
  stillRuns?: (owner: string) => boolean;
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
  outbox: OutboxBacklog;
  last_error: string | null;
}

export class ChatService {
  /** Hand this to each adapter's start(). */
  readonly sink: InboundSink = (event) => this.receive(event);
  readonly inbox: PlatformInbox;
  private readonly store: StorePort;
  private readonly host: ChatHost;
  private readonly outbox: ChatOutbox;
  private readonly now: () => number;
  private readonly adapters = new Map<string, PlatformAdapter>();
  private readonly allowed = new Map<string, Set<string> | "anyone">();
  private readonly lanes = new Map<string, Lane>();
  /** Chats told they are not allowed, this process. */
  private readonly refused = new Set<string>();
  /** Chats told "back online", this process. */
  private readonly welcomed = new Set<string>();
  /** Resumed turns handed over by the gateway, by session id, until recover() takes them. */
  private readonly handover = new Map<string, Promise<TurnResult>>();
  private readonly notices: Promise<unknown>[] = [];
  private readonly work = new Set<Promise<unknown>>();
  /** Approvals this service decided (a press, /approve): their messages are edited already. */
  private readonly decided = new Set<string>();
  /** Inbox keys of commands and presses being run now. */
  private readonly handling = new Set<string>();
  private readonly lastUpdate: Record<string, number> = {};
  private readonly lastError: Record<string, string> = {};
  /** Aborted by stop(); a new one at restart() (this process holds the platforms again). */
  private stopping = new AbortController();
  private readonly context: CommandContext;
  private readonly writer: ChatWriter;
  private readonly direct: PlatformDirect;
  private readonly turns: LaneRunDeps;

  constructor(private readonly options: ChatServiceOptions) {
    this.store = options.store;
    this.host = options.host;
    this.outbox = options.outbox;
    this.now = options.now ?? Date.now;
    this.inbox = options.inbox ?? new PlatformInbox({ store: options.store, now: this.now });
    for (const a of options.adapters) this.adapters.set(a.name, a);
    for (const [platform, users] of Object.entries(options.allowedUsers))
      this.allowed.set(platform, users === "anyone" ? "anyone" : new Set(users));
    const retryMs = options.busyRetryMs ?? 1_000;
    const wait = (ms: number) => this.wait(ms);
    const fail = (platform: string, error: unknown) => this.fail(platform, error);
    this.direct = new PlatformDirect(this.adapters);
    this.writer = new ChatWriter({
      store: this.store,
      outbox: this.outbox,
      host: this.host,
      adapters: this.adapters,
      now: this.now,
      wait,
      retryMs,
      fail,
      noteError: (platform, message) => {
        this.lastError[platform] = message;
      },
    });
    this.turns = {
      store: this.store,
      host: this.host,
      writer: this.writer,
      direct: this.direct,
      now: this.now,
      wait,
      retryMs,
      typingEveryMs: options.typingEveryMs ?? 4_000,
      isDone: (entry) => this.isDone(entry),
      onTurnEvent: (chat, event) => this.onTurnEvent(chat, event),
      fail,
    };
    this.context = {
      store: this.store,
      host: this.host,
      now: this.now,
      inbox: this.inbox,
      lane: (entry) => this.lanes.get(entry.session_key) ?? null,
      newSession: (entry, running) => this.writer.newSession(entry, running),
      commit: (entry, done, texts, extra) => this.writer.commit(entry, done, texts, extra),
      dispatch: (entry) => this.dispatch(entry),
      answerButton: (event, text) => this.direct.answer(event, text),
      decided: this.decided,
    };
  }

  /** Commit an allowed user's update and start what it asks; refuse a stranger's. */
  private async receive(event: InboundEvent): Promise<void> {
    const platform = event.chat.platform;
    this.lastUpdate[platform] = this.now();
    const allowed = this.allowed.get(platform);
    if (allowed !== "anyone" && allowed?.has(event.user.id) !== true) return this.refuse(event);
    const { created, entry } = await this.inbox.accept(event);
    // A redelivery: the first delivery runs it (or ran it); a restart's recover() runs what waits.
    if (!created) return;
    this.dispatch(entry);
  }

  /** Queue a message on its lane, or run a command or button press inline. */
  private dispatch(entry: InboxEntry): void {
    if (this.stopping.signal.aborted) return;
    if (entry.event.type !== "message") {
      this.track(this.inline(entry)).catch((error) => this.fail(entry.platform, error));
      return;
    }
    const lane = this.laneOf(entry);
    enqueue(lane, { entry });
    this.pump(lane);
  }

  /** A command or press, once however often dispatch and recover() both come to it. */
  private async inline(entry: InboxEntry): Promise<void> {
    if (this.handling.has(entry.key)) return;
    // Held before the store is read, so a second dispatch of the entry meanwhile stops above.
    this.handling.add(entry.key);
    try {
      if (await this.isDone(entry)) return;
      await runInline(this.context, entry);
    } finally {
      this.handling.delete(entry.key);
    }
  }

  /** Whether the store has the entry done already (recover() read it pending a moment ago). */
  private async isDone(entry: InboxEntry): Promise<boolean> {
    return (await this.inbox.get(entry.platform, entry.update_id))?.state === "done";
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
      await this.direct.answer(event, "Not allowed: this bot answers only its allowed users.");
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
    if (lane.pumping !== null || lane.queue.length === 0 || this.stopping.signal.aborted) return;
    lane.pumping = this.track(this.drain(lane));
  }

  /**
   * The pump's work. It yields before anything else: its end clears `lane.pumping`, which must
   * come after pump() set it. (Run at once, an empty queue ended it before the assignment, which
   * then marked the lane as pumped for good: the chat was never answered again.)
   */
  private async drain(lane: Lane): Promise<void> {
    await Promise.resolve();
    try {
      for (let item = lane.queue.shift(); item !== undefined; item = lane.queue.shift()) {
        if (this.stopping.signal.aborted) return;
        await runLaneItem(this.turns, lane, item);
      }
    } finally {
      lane.current = null;
      lane.pumping = null;
    }
  }

  /**
   * An approval a chat's turn asks for becomes a message with buttons; one decided elsewhere (the
   * runs API) or expired edits that message, so no stale buttons stay.
   */
  private onTurnEvent(chat: ChatRef, event: AgentEvent): void {
    let input: EnqueueInput | null = null;
    if (event.type === "approval_requested") input = approvalRequest(chat, event);
    else if (event.type === "approval_decided" && !this.decided.delete(event.approval_id)) {
      // A listener cannot wait: the read and the enqueue after it are tracked, a failure told.
      const closed = approvalClosed(this.store, this.host, chat, event.approval_id).then((found) =>
        found === null ? undefined : this.outbox.enqueue(found),
      );
      this.track(closed).catch((error) => this.fail(chat.platform, error));
      return;
    }
    if (input === null) return;
    this.track(this.outbox.enqueue(input)).catch((error) => this.fail(chat.platform, error));
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
          this.direct.once({ type: "send", chat, text, format: "plain" }, chat.platform, options.timeoutMs),
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
  async resumed(sessionId: string, result: Promise<TurnResult>): Promise<boolean> {
    const record = (await listChatSessions(this.store)).find((r) => r.running?.session_id === sessionId);
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
  async eventsFor(sessionId: string): Promise<((event: AgentEvent) => void) | undefined> {
    const record = (await listChatSessions(this.store)).find((r) => r.running?.session_id === sessionId);
    return record === undefined ? undefined : (event) => this.onTurnEvent(record.chat, event);
  }

  /**
   * At start: run what the inbox holds, in arrival order, and answer the resumed turns. What this
   * service runs already (a stop, then a restart while a turn went on) is left to its lane.
   */
  async recover(): Promise<RecoverReport> {
    await Promise.all(this.notices.splice(0));
    const report = await recoverInbox({
      store: this.store,
      pending: (await this.inbox.pending()).filter(
        (e) => this.adapters.has(e.platform) && !this.inFlight(e.key),
      ),
      stillRuns: this.options.stillRuns ?? (() => false),
      handover: this.handover,
      inline: (entry) => this.inline(entry),
      queue: (item) => enqueue(this.laneOf(item.entry), item),
      answer: (entry, done, text, error) =>
        this.writer.commit(entry, done, [text], [], error, error === null ? "markdown" : "plain"),
    });
    for (const lane of this.lanes.values()) this.pump(lane);
    return report;
  }

  /** Per platform: last update, turns running, messages waiting, the outbox's backlog, last error. */
  async status(): Promise<Record<string, PlatformChatStatus>> {
    const backlog = await this.outbox.backlog();
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
    this.direct.stopTyping();
  }

  /**
   * After a stop: take updates and run lanes again. What waited on a lane is dropped, to be read
   * again from the inbox by recover(): another process may have answered or be running it since
   * (a turn resumed here is kept: only this process has its result).
   */
  restart(): void {
    if (!this.stopping.signal.aborted) return;
    this.stopping = new AbortController();
    for (const lane of this.lanes.values()) lane.queue = lane.queue.filter((i) => i.resumed !== undefined);
  }

  /** Whether an inbox entry is queued or running on one of this service's lanes. */
  private inFlight(key: string): boolean {
    for (const lane of this.lanes.values())
      if (lane.current?.entry.key === key || lane.queue.some((i) => i.entry.key === key)) return true;
    return false;
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
