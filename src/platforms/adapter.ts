// What a chat platform is to Tenax: an adapter turns the platform's updates into inbound events
// for a sink and performs a few outbound operations. It knows the wire (Telegram's Bot API, a
// webhook); everything above it (sessions, the inbox, the outbox, commands) is the same for all
// platforms, so Slack or Discord is one adapter file more.
//
// Two rules every adapter keeps:
// - An update is acknowledged to the platform (the next getUpdates offset, a webhook's 200) only
//   after the sink's promise resolved: the sink commits it to the inbox first.
// - `perform` never throws: a failure is returned as one classified PlatformFailure, made once at
//   the boundary from the platform's status and body, so nothing above matches on message text.

/** Where a message goes or came from. `thread_id` is a forum topic or thread, or null. */
export interface ChatRef {
  /** The adapter's name: `telegram`, `webhook`. */
  platform: string;
  chat_id: string;
  thread_id: string | null;
}

export type ChatType = "private" | "group";

export interface PlatformUser {
  id: string;
  /** For people: a display name or @username; may be empty. */
  name: string;
}

/** The commands run inline, whatever the session is doing. */
export const COMMANDS = ["new", "stop", "status", "retry", "approve", "deny"] as const;
export type CommandName = (typeof COMMANDS)[number];

export interface InboundBase {
  /** The platform's id of the update, unique per platform: the inbox's idempotency key. */
  update_id: string;
  chat: ChatRef;
  chat_type: ChatType;
  user: PlatformUser;
  /** When the platform says it happened (ms), or when it arrived. */
  at: number;
}

/** A text message that is not a command. */
export interface InboundMessage extends InboundBase {
  type: "message";
  message_id: string;
  text: string;
}

/** A message whose text is one of the COMMANDS (`/stop`, `/approve@MyBot ID`). */
export interface InboundCommand extends InboundBase {
  type: "command";
  message_id: string;
  command: CommandName;
  /** The text after the command, trimmed; may be empty. */
  args: string;
}

/** A press of a button Tenax sent (a Telegram callback query). */
export interface InboundButton extends InboundBase {
  type: "button";
  /** What answers the press (`answer` op). */
  callback_id: string;
  /** The button's data, as sent. */
  data: string;
  /** The message the button was on. */
  message_id: string;
}

export type InboundEvent = InboundMessage | InboundCommand | InboundButton;

/**
 * Where an adapter hands inbound events. It resolves once the event is committed (the adapter may
 * then acknowledge the update) and rejects when it could not be; the adapter then does not
 * acknowledge, so the platform delivers the update again.
 */
export type InboundSink = (event: InboundEvent) => Promise<void>;

export interface Button {
  text: string;
  /** Returned in the press's `data`; Telegram allows 64 bytes. */
  data: string;
}

/** `plain` is sent as is; `markdown` may be rejected, and is then resent as plain text. */
export type TextFormat = "plain" | "markdown";

export interface SendOp {
  type: "send";
  chat: ChatRef;
  text: string;
  format: TextFormat;
  /** Rows of buttons under the message. */
  buttons?: Button[][];
  /** The platform id of the message this answers, if any. */
  reply_to?: string;
  /** The outbox entry's key: a platform that takes one (the webhook) can drop a resend. */
  idempotency_key?: string;
}

export interface EditOp {
  type: "edit";
  chat: ChatRef;
  message_id: string;
  text: string;
  format: TextFormat;
  /** The buttons after the edit; absent or empty removes them. */
  buttons?: Button[][];
  /** The outbox entry's key, as for a send. */
  idempotency_key?: string;
}

export interface TypingOp {
  type: "typing";
  chat: ChatRef;
}

export interface AnswerOp {
  type: "answer";
  callback_id: string;
  /** A short notice shown to who pressed, or none. */
  text?: string;
}

export type OutboundOp = SendOp | EditOp | TypingOp | AnswerOp;

/** An outbound operation's failure, classified once by the adapter. */
export interface PlatformFailure {
  /** For people and the outbox's last_error: what failed, naming no token. */
  message: string;
  /** A network error, a timeout, a 5xx or a 429: the same op may succeed later. */
  retryable: boolean;
  /** The wait the platform asked for (Telegram's `retry_after` on 429), in ms; else null. */
  retry_after_ms: number | null;
  /** The platform refused the formatting (Telegram: "can't parse entities"): resend as plain. */
  plain_text: boolean;
}

export type OutboundResult =
  | {
      ok: true /** The platform's id of the message sent or edited; null for typing, answer. */;
      message_id: string | null;
    }
  | { ok: false; error: PlatformFailure };

export interface PlatformAdapter {
  /** The platform's name, the first part of every ChatRef it makes: `telegram`, `webhook`. */
  readonly name: string;
  /** Connect and deliver inbound events to `sink` until stopped; resolves once started. */
  start(sink: InboundSink): Promise<void>;
  /** Stop receiving; resolves once no more events will reach the sink. */
  stop(): Promise<void>;
  /** Perform one outbound operation. Never throws; honours `signal` (a timeout or a stop). */
  perform(op: OutboundOp, signal?: AbortSignal): Promise<OutboundResult>;
  /**
   * Cut a text too long for one platform message into the messages it is sent as (Telegram: 4,096
   * units). The chat service queues each part as its own outbox entry, because the outbox's
   * exactly-once holds per entry: one entry sent as three messages, failing at the second, would
   * send the first again on its retry. Without it, a text is one message.
   */
  split?(text: string, format: TextFormat): string[];
}

/** A failure the same op may get past later: waited for `retry_after_ms` if the platform said. */
export function retryable(message: string, retryAfterMs: number | null = null): PlatformFailure {
  return { message, retryable: true, retry_after_ms: retryAfterMs, plain_text: false };
}

/** A failure that retrying will not fix (a 403 from a blocked bot, a chat that is gone). */
export function permanent(message: string): PlatformFailure {
  return { message, retryable: false, retry_after_ms: null, plain_text: false };
}

/** The platform refused the text's formatting: the same text as plain text may go through. */
export function formattingRejected(message: string): PlatformFailure {
  return { message, retryable: false, retry_after_ms: null, plain_text: true };
}

/**
 * The command a message's text is, if it is one of COMMANDS: `/stop`, `/approve apr_1`, and in
 * groups `/status@MyBot` (a command addressed to another bot, `/new@OtherBot`, is not ours, so
 * pass `botName` where the platform has one). Anything else is null: an ordinary message.
 */
export function parseCommand(text: string, botName?: string): { command: CommandName; args: string } | null {
  const match = /^\/([a-zA-Z_]+)(?:@([A-Za-z0-9_]+))?(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (match === null) return null;
  const [, word = "", to, rest = ""] = match;
  if (to !== undefined && botName !== undefined && to.toLowerCase() !== botName.toLowerCase()) return null;
  const command = COMMANDS.find((c) => c === word.toLowerCase());
  return command === undefined ? null : { command, args: rest.trim() };
}

/** A text message as the event it is: a command when its text is one, a message otherwise. */
export function textEvent(
  base: InboundBase & { message_id: string },
  text: string,
  botName?: string,
): InboundMessage | InboundCommand {
  const command = parseCommand(text, botName);
  return command === null ? { ...base, type: "message", text } : { ...base, type: "command", ...command };
}
