// A Telegram update as the inbound event Tenax reads: a text message (or a photo's caption), a
// command, or a press of one of Tenax's buttons. Everything else (edits, stickers, channel posts,
// joins) is none, and is acknowledged without being run.
import type { Message, Update } from "grammy/types";
import { type ChatRef, type ChatType, type InboundBase, type InboundEvent, textEvent } from "../adapter.js";

export const TELEGRAM_PLATFORM = "telegram";

/** The updates Tenax asks for: nothing else is delivered to it. */
export const ALLOWED_UPDATES = ["message", "callback_query"] as const;

export function inboundOf(update: Update, botUsername?: string): InboundEvent | null {
  if (update.message) {
    const base = baseOf(update.update_id, update.message);
    const text = update.message.text ?? update.message.caption;
    if (base === null || text === undefined || text.trim() === "") return null;
    return textEvent({ ...base, message_id: String(update.message.message_id) }, text, botUsername);
  }
  const query = update.callback_query;
  if (query?.data !== undefined && query.message !== undefined) {
    // The press's time is not on the wire: the message's date stands in, at least as late.
    const base = baseOf(update.update_id, query.message);
    if (base === null) return null;
    return {
      ...base,
      user: userOf(query.from),
      type: "button",
      callback_id: query.id,
      data: query.data,
      message_id: String(query.message.message_id),
    };
  }
  return null;
}

type Chatted = Pick<Message, "chat" | "date" | "from" | "message_thread_id"> & { is_topic_message?: boolean };

function baseOf(updateId: number, message: Chatted): InboundBase | null {
  const type = chatTypeOf(message.chat.type);
  if (type === null || message.from === undefined) return null;
  return {
    update_id: String(updateId),
    chat: chatOf(message),
    chat_type: type,
    user: userOf(message.from),
    at: message.date * 1000,
  };
}

function chatOf(message: Chatted): ChatRef {
  const thread = message.is_topic_message && message.message_thread_id !== undefined;
  return {
    platform: TELEGRAM_PLATFORM,
    chat_id: String(message.chat.id),
    thread_id: thread ? String(message.message_thread_id) : null,
  };
}

function chatTypeOf(type: string): ChatType | null {
  if (type === "private") return "private";
  if (type === "group" || type === "supergroup") return "group";
  return null;
}

function userOf(from: { id: number; username?: string; first_name: string; last_name?: string }) {
  const name = from.username
    ? `@${from.username}`
    : [from.first_name, from.last_name].filter(Boolean).join(" ");
  return { id: String(from.id), name };
}
