// The Bot API objects the simulator sends, as Telegram writes them on the wire (snake_case, fields
// left out rather than null). Only the fields the simulator fills; grammY's own types are wider.

export interface WireUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
  language_code?: string;
}

export type ChatType = "private" | "group" | "supergroup";

export interface WireChat {
  id: number;
  type: ChatType;
  title?: string;
  first_name?: string;
  username?: string;
  is_forum?: true;
}

export interface WireEntity {
  type: string;
  offset: number;
  length: number;
  url?: string;
  language?: string;
}

export interface InlineButton {
  text: string;
  callback_data?: string;
  url?: string;
}

export interface InlineKeyboardMarkup {
  inline_keyboard: InlineButton[][];
}

export interface WireMessage {
  message_id: number;
  from?: WireUser;
  chat: WireChat;
  date: number;
  edit_date?: number;
  message_thread_id?: number;
  is_topic_message?: true;
  reply_to_message?: WireMessage;
  text?: string;
  entities?: WireEntity[];
  reply_markup?: InlineKeyboardMarkup;
}

export interface WireCallbackQuery {
  id: string;
  from: WireUser;
  message: WireMessage;
  chat_instance: string;
  data: string;
}

export type UpdateType = "message" | "callback_query";

export type WireUpdate =
  | { update_id: number; message: WireMessage }
  | { update_id: number; callback_query: WireCallbackQuery };

export function updateType(update: WireUpdate): UpdateType {
  return "message" in update ? "message" : "callback_query";
}

/** The body of every Bot API answer. */
export type BotApiAnswer =
  | { ok: true; result: unknown }
  | { ok: false; error_code: number; description: string; parameters?: { retry_after?: number } };

/** The text Telegram puts after the status in an error description, for the statuses it uses. */
export function statusText(status: number): string {
  const known: Record<number, string> = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
  };
  return known[status] ?? `Error ${status}`;
}
