// What the Telegram simulator is told and what it records: its options, the handle a test drives it
// with, and one record per Bot API call, per message the bot sent, per chat action and per answered
// callback query.
import type { Clock } from "../../../core/deps.js";
import type { Fault, FaultInput, OutageInput } from "./faults.js";
import type { ChatType, InlineKeyboardMarkup, WireEntity, WireMessage, WireUser } from "./wire.js";

export interface WebhookBackoff {
  /** The wait after the first failed push (default 50 ms: short, for tests). */
  initialMs: number;
  /** The longest wait between pushes (default 1000 ms). */
  maxMs: number;
  /** How long a push may take before it counts as failed (default 5000 ms). */
  timeoutMs: number;
}

export interface TelegramSimOptions {
  /** The one token it accepts (default "123456789:TEST-token"); the bot's id is the part before ":". */
  token?: string;
  /** The bot's name and username (default "Tenax Test Bot", "tenax_test_bot"). */
  bot?: { first_name?: string; username?: string };
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  clock?: Clock;
  webhookBackoff?: Partial<WebhookBackoff>;
  /** Chats known from the start, as if a user had written in them. */
  chats?: ChatInput[];
}

export interface ChatInput {
  id: number;
  /** private (the default for a positive id), group or supergroup (the default for a negative id). */
  type?: ChatType;
  title?: string;
  /** A supergroup with topics: messages may carry message_thread_id. */
  is_forum?: boolean;
}

export interface UserInput {
  id: number;
  first_name?: string;
  username?: string;
  last_name?: string;
  language_code?: string;
}

export interface InjectMessageInput {
  chat: number | ChatInput;
  /** The sender (default: a user whose id is the chat's, or 1000 in a group). */
  from?: number | UserInput;
  text: string;
  message_thread_id?: number;
  /** A reply to this message of the chat. */
  reply_to_message_id?: number;
}

export interface PressButtonInput {
  chat_id: number;
  /** The bot's message that carries the inline keyboard. */
  message_id: number;
  /** The callback_data of the button pressed; it must be on the message's keyboard. */
  data: string;
  from?: number | UserInput;
}

export interface Injected {
  update_id: number;
  /** The message injected, or the id of the callback query. */
  message?: WireMessage;
  callback_query_id?: string;
}

/** How a call ended. `open` while it is being answered (a long poll, a hang). */
export type CallEnd = "open" | "answered" | "dropped" | "client_closed" | "server_closed";

export interface CallRecord {
  /** 1 for the first call after start or reset. */
  seq: number;
  method: string;
  /** The parameters as read (query, JSON or form), with the method's defaults not filled in. */
  params: Record<string, unknown>;
  /** The HTTP verb: grammY sends POST, a person may send GET. */
  verb: string;
  at: number;
  /** The fault that answered it, if one did. */
  fault: Fault["type"] | "outage" | null;
  status: number | null;
  /** The body answered ({ok, result} or {ok:false, ...}), null when none was sent. */
  answer: unknown;
  ended: CallEnd;
  ended_at: number | null;
}

export interface MessageEdit {
  at: number;
  /** The text and markup before this edit. */
  previous: { text: string; entities: WireEntity[]; reply_markup?: InlineKeyboardMarkup };
}

/** A message the bot sent, as it stands now, and how it got there. */
export interface SentMessage {
  chat_id: number;
  message_id: number;
  text: string;
  /** What the bot sent before parse_mode was applied. */
  raw_text: string;
  parse_mode?: string;
  entities: WireEntity[];
  reply_markup?: InlineKeyboardMarkup;
  message_thread_id?: number;
  reply_to_message_id?: number;
  date: number;
  edits: MessageEdit[];
  deleted: boolean;
  /** The Message object as getUpdates and callback queries show it. */
  wire: WireMessage;
}

export interface ChatActionRecord {
  chat_id: number;
  action: string;
  message_thread_id?: number;
  at: number;
}

export interface CallbackAnswerRecord {
  callback_query_id: string;
  data: string;
  chat_id: number;
  message_id: number;
  text?: string;
  show_alert?: boolean;
  url?: string;
  at: number;
}

export interface WaitOptions {
  /** How long to wait (default 5000 ms); then it rejects saying what it saw. */
  timeoutMs?: number;
}

export interface TelegramSim {
  /** The apiRoot for grammY: `new Bot(token, { client: { apiRoot } })`. */
  readonly apiRoot: string;
  /** The base of the control API: `${apiRoot}/__control`. */
  readonly controlUrl: string;
  readonly port: number;
  readonly token: string;
  readonly botUser: WireUser;
  /** Make a chat known, so the bot may send to it before anyone wrote there. */
  registerChat(chat: ChatInput): void;
  injectMessage(input: InjectMessageInput): Injected;
  pressButton(input: PressButtonInput): Injected;
  /** Queue faults for the next calls, taken in order; throws TelegramSimFaultError on a bad one. */
  fault(faults: FaultInput | FaultInput[]): void;
  /**
   * Every call fails until liftOutage(): a 5xx ({mode:"error"}, the default), its connection cut
   * ({mode:"drop"}), or refused as the simulator stops listening ({mode:"refuse", for_ms?}).
   */
  startOutage(outage?: OutageInput): void;
  /** Resolves once the simulator listens again (after a refuse outage). */
  liftOutage(): Promise<void>;
  /** Let every hanging call go on to its normal answer. */
  releaseHangs(): number;
  faultsQueued(): number;
  calls(method?: string): CallRecord[];
  /** The messages the bot sent to a chat, edits applied, deleted ones included and marked. */
  sentMessages(chatId: number): SentMessage[];
  chatActions(chatId?: number): ChatActionRecord[];
  callbackAnswers(): CallbackAnswerRecord[];
  /** Updates not yet confirmed by getUpdates nor delivered to a webhook. */
  pendingUpdates(): number;
  waitForMessages(chatId: number, count: number, options?: WaitOptions): Promise<SentMessage[]>;
  /** Resolves once a getUpdates long poll is being held. */
  waitForPoll(options?: WaitOptions): Promise<void>;
  waitForCalls(method: string, count: number, options?: WaitOptions): Promise<CallRecord[]>;
  /** Forget calls, messages, updates, faults, webhook and chats (the options' chats come back). */
  reset(): void;
  /** Answers held long polls with no updates, cuts hanging calls, stops listening. */
  close(): Promise<void>;
}
