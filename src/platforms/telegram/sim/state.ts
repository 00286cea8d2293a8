// What the Telegram simulator holds between calls: the chats it knows and their messages, the queue
// of updates not yet confirmed, the webhook, and the records a test reads (calls, the bot's messages,
// chat actions, callback answers). Anything that changes it calls changed(), which wakes the long
// polls, the webhook pusher and the waiters.
import type { Clock } from "../../../core/deps.js";
import { FaultQueue } from "./faults.js";
import type {
  CallbackAnswerRecord,
  CallRecord,
  ChatActionRecord,
  ChatInput,
  SentMessage,
  UserInput,
} from "./types.js";
import type { UpdateType, WireChat, WireMessage, WireUpdate, WireUser } from "./wire.js";

export interface ChatState {
  chat: WireChat;
  /** The last message id used in the chat; user's and bot's messages share it, as in Telegram. */
  lastMessageId: number;
  messages: Map<number, WireMessage>;
  /** The bot's own messages, with their history. */
  sent: SentMessage[];
  /** The chat_instance callback queries from this chat carry. */
  instance: string;
}

export interface Webhook {
  url: string;
  secret_token?: string;
  max_connections: number;
  allowed_updates?: string[];
  last_error_date?: number;
  last_error_message?: string;
}

export interface CallbackQueryState {
  id: string;
  data: string;
  chat_id: number;
  message_id: number;
  answered: boolean;
}

export class TelegramSimState {
  readonly faults = new FaultQueue();
  chats = new Map<number, ChatState>();
  updates: WireUpdate[] = [];
  /** The update_id the next update gets; it keeps rising across resets, as a bot's does. */
  private nextUpdateId = 100_000_001;
  allowedUpdates: string[] | null = null;
  webhook: Webhook | null = null;
  records: CallRecord[] = [];
  chatActions: ChatActionRecord[] = [];
  callbackAnswers: CallbackAnswerRecord[] = [];
  callbackQueries = new Map<string, CallbackQueryState>();
  commands = new Map<string, unknown[]>();
  /** Long polls being held now. */
  pollsHeld = 0;
  private listeners = new Set<() => void>();
  private nextCallbackId = 1;

  constructor(
    readonly botUser: WireUser,
    readonly clock: Clock,
    private readonly initialChats: ChatInput[] = [],
  ) {
    for (const chat of initialChats) this.registerChat(chat);
  }

  now(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  /** Run on every change until the returned function is called. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed(): void {
    for (const listener of [...this.listeners]) listener();
  }

  registerChat(input: ChatInput): ChatState {
    const existing = this.chats.get(input.id);
    if (existing) return existing;
    const type = input.type ?? (input.id > 0 ? "private" : "supergroup");
    const chat: WireChat = { id: input.id, type };
    if (type === "private") chat.first_name = input.title ?? `User ${input.id}`;
    else chat.title = input.title ?? `Chat ${input.id}`;
    if (input.is_forum && type === "supergroup") chat.is_forum = true;
    const state: ChatState = {
      chat,
      lastMessageId: 0,
      messages: new Map(),
      sent: [],
      instance: String(BigInt.asUintN(63, BigInt(input.id) * 2654435761n)),
    };
    this.chats.set(input.id, state);
    this.changed();
    return state;
  }

  chat(id: number): ChatState | undefined {
    return this.chats.get(id);
  }

  user(from: number | UserInput | undefined, chat: WireChat): WireUser {
    const input: UserInput =
      typeof from === "number" ? { id: from } : (from ?? { id: chat.type === "private" ? chat.id : 1000 });
    const user: WireUser = {
      id: input.id,
      is_bot: false,
      first_name:
        input.first_name ??
        (chat.type === "private" && chat.first_name ? chat.first_name : `User ${input.id}`),
      username: input.username ?? `user${input.id}`,
    };
    if (input.last_name) user.last_name = input.last_name;
    if (input.language_code) user.language_code = input.language_code;
    return user;
  }

  /** Queue an update, unless the bot's allowed_updates leave its type out (Telegram drops those). */
  push(make: (updateId: number) => WireUpdate, type: UpdateType): number {
    const update_id = this.nextUpdateId;
    this.nextUpdateId += 1;
    const allowed = this.webhook?.allowed_updates ?? this.allowedUpdates;
    if (allowed === null || allowed.length === 0 || allowed.includes(type))
      this.updates.push(make(update_id));
    this.changed();
    return update_id;
  }

  /** getUpdates' offset: updates below it are confirmed and forgotten; -N keeps the last N. */
  confirm(offset: number): void {
    if (offset < 0) this.updates = this.updates.slice(offset);
    else if (offset > 0) this.updates = this.updates.filter((u) => u.update_id >= offset);
  }

  newCallbackId(): string {
    const id = `${this.botUser.id}${String(this.nextCallbackId).padStart(6, "0")}`;
    this.nextCallbackId += 1;
    return id;
  }

  record(entry: Omit<CallRecord, "seq">): CallRecord {
    const record = { seq: this.records.length + 1, ...entry };
    this.records.push(record);
    this.changed();
    return record;
  }

  reset(): void {
    this.faults.clear();
    this.chats = new Map();
    this.updates = [];
    this.allowedUpdates = null;
    this.webhook = null;
    this.records = [];
    this.chatActions = [];
    this.callbackAnswers = [];
    this.callbackQueries = new Map();
    this.commands = new Map();
    for (const chat of this.initialChats) this.registerChat(chat);
    this.changed();
  }
}
