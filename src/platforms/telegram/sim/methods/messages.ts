// The bot's messages: sendMessage, editMessageText, deleteMessage and sendChatAction, with the
// refusals Telegram gives (chat not found, text empty or too long, entities that do not parse, a
// message to edit not found or not modified). Each message the bot sends is kept per chat with its
// edit history for the test to read.
import { z } from "zod";
import { badRequest } from "../errors.js";
import { withoutReply } from "../inject.js";
import { parseMarkup } from "../markup.js";
import type { ChatState } from "../state.js";
import type { SentMessage } from "../types.js";
import type { InlineKeyboardMarkup, WireEntity, WireMessage } from "../wire.js";
import { type BotMethod, chatOf, parseParams } from "./context.js";

export const MAX_TEXT = 4096;

const chatId = z.union([z.number().int(), z.string().min(1)]);
const text = z.union([z.string(), z.number()]).transform(String).optional();
const parseMode = z.enum(["MarkdownV2", "Markdown", "HTML"]).optional();
const button = z.looseObject({
  text: z.string().min(1),
  callback_data: z.string().min(1).max(64).optional(),
  url: z.string().optional(),
});
const replyMarkup = z.union([
  z.looseObject({ inline_keyboard: z.array(z.array(button)) }),
  // Reply keyboards and the rest are taken and kept out of the record.
  z.looseObject({}),
]);

const sendSchema = z.looseObject({
  chat_id: chatId,
  text,
  parse_mode: parseMode,
  reply_markup: replyMarkup.optional(),
  reply_to_message_id: z.number().int().optional(),
  reply_parameters: z
    .looseObject({
      message_id: z.number().int(),
      chat_id: chatId.optional(),
      allow_sending_without_reply: z.boolean().optional(),
    })
    .optional(),
  allow_sending_without_reply: z.boolean().optional(),
  message_thread_id: z.number().int().optional(),
});

/** The text as sent, checked and parsed: Telegram's order is empty, entities, then length. */
function readText(raw: string | undefined, mode: z.infer<typeof parseMode>) {
  if (raw === undefined || raw.trim() === "") throw badRequest("message text is empty");
  const parsed = parseMarkup(raw, mode);
  if (!parsed.ok) throw badRequest(`can't parse entities: ${parsed.reason}`);
  if (parsed.text.trim() === "") throw badRequest("message text is empty");
  if (parsed.text.length > MAX_TEXT) throw badRequest("message is too long");
  return parsed;
}

function keyboard(markup: unknown): InlineKeyboardMarkup | undefined {
  if (markup && typeof markup === "object" && "inline_keyboard" in markup)
    return markup as InlineKeyboardMarkup;
  return undefined;
}

export const sendMessage: BotMethod = ({ state, params }) => {
  const p = parseParams(sendSchema, params);
  const chat = chatOf(state, p.chat_id);
  const parsed = readText(p.text, p.parse_mode);
  const replyTo = p.reply_parameters?.message_id ?? p.reply_to_message_id;
  const allowWithout = p.reply_parameters?.allow_sending_without_reply ?? p.allow_sending_without_reply;
  const replied = replyTo === undefined ? undefined : chat.messages.get(replyTo);
  if (replyTo !== undefined && !replied && !allowWithout) throw badRequest("message to be replied not found");
  chat.lastMessageId += 1;
  const wire: WireMessage = {
    message_id: chat.lastMessageId,
    from: state.botUser,
    chat: chat.chat,
    date: state.now(),
    text: parsed.text,
  };
  if (p.message_thread_id !== undefined) wire.message_thread_id = p.message_thread_id;
  if (replied) wire.reply_to_message = withoutReply(replied);
  if (parsed.entities.length > 0) wire.entities = parsed.entities;
  const markup = keyboard(p.reply_markup);
  if (markup) wire.reply_markup = markup;
  chat.messages.set(wire.message_id, wire);
  const sent: SentMessage = {
    chat_id: chat.chat.id,
    message_id: wire.message_id,
    text: parsed.text,
    raw_text: p.text ?? "",
    entities: parsed.entities,
    date: wire.date,
    edits: [],
    deleted: false,
    wire,
    ...(p.parse_mode ? { parse_mode: p.parse_mode } : {}),
    ...(markup ? { reply_markup: markup } : {}),
    ...(p.message_thread_id !== undefined ? { message_thread_id: p.message_thread_id } : {}),
    ...(replied ? { reply_to_message_id: replied.message_id } : {}),
  };
  chat.sent.push(sent);
  state.changed();
  return wire;
};

const editSchema = z.looseObject({
  chat_id: chatId.optional(),
  message_id: z.number().int().optional(),
  inline_message_id: z.string().optional(),
  text,
  parse_mode: parseMode,
  reply_markup: replyMarkup.optional(),
});

function ownMessage(chat: ChatState, messageId: number | undefined, notFound: string): SentMessage {
  const sent = chat.sent.find((m) => m.message_id === messageId && !m.deleted);
  if (sent) return sent;
  if (messageId !== undefined && chat.messages.has(messageId)) throw badRequest("message can't be edited");
  throw badRequest(notFound);
}

export const editMessageText: BotMethod = ({ state, params }) => {
  const p = parseParams(editSchema, params);
  // Inline messages (sent through inline mode) are not simulated: there is none to edit.
  if (p.chat_id === undefined)
    throw badRequest(p.inline_message_id ? "message to edit not found" : "chat_id is empty");
  const chat = chatOf(state, p.chat_id);
  if (p.message_id === undefined) throw badRequest("message_id is empty");
  const sent = ownMessage(chat, p.message_id, "message to edit not found");
  const parsed = readText(p.text, p.parse_mode);
  const markup = keyboard(p.reply_markup);
  if (
    parsed.text === sent.text &&
    sameEntities(parsed.entities, sent.entities) &&
    JSON.stringify(markup) === JSON.stringify(sent.reply_markup)
  )
    throw badRequest(
      "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
    );
  sent.edits.push({
    at: state.clock.now(),
    previous: {
      text: sent.text,
      entities: sent.entities,
      ...(sent.reply_markup ? { reply_markup: sent.reply_markup } : {}),
    },
  });
  sent.text = parsed.text;
  sent.raw_text = p.text ?? "";
  sent.entities = parsed.entities;
  if (p.parse_mode) sent.parse_mode = p.parse_mode;
  else delete sent.parse_mode;
  if (markup) sent.reply_markup = markup;
  else delete sent.reply_markup;
  const wire: WireMessage = { ...sent.wire, text: parsed.text, edit_date: state.now() };
  if (parsed.entities.length > 0) wire.entities = parsed.entities;
  else delete wire.entities;
  if (markup) wire.reply_markup = markup;
  else delete wire.reply_markup;
  sent.wire = wire;
  chat.messages.set(wire.message_id, wire);
  state.changed();
  return wire;
};

function sameEntities(a: WireEntity[], b: WireEntity[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const deleteSchema = z.looseObject({ chat_id: chatId, message_id: z.number().int() });

export const deleteMessage: BotMethod = ({ state, params }) => {
  const p = parseParams(deleteSchema, params);
  const chat = chatOf(state, p.chat_id);
  const sent = chat.sent.find((m) => m.message_id === p.message_id && !m.deleted);
  if (!sent && !chat.messages.has(p.message_id)) throw badRequest("message to delete not found");
  if (sent) sent.deleted = true;
  chat.messages.delete(p.message_id);
  state.changed();
  return true;
};

const ACTIONS = [
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
] as const;

const chatActionSchema = z.looseObject({
  chat_id: chatId,
  action: z.string(),
  message_thread_id: z.number().int().optional(),
});

export const sendChatAction: BotMethod = ({ state, params }) => {
  const p = parseParams(chatActionSchema, params);
  const chat = chatOf(state, p.chat_id);
  if (!(ACTIONS as readonly string[]).includes(p.action))
    throw badRequest("wrong parameter action in request");
  state.chatActions.push({
    chat_id: chat.chat.id,
    action: p.action,
    at: state.clock.now(),
    ...(p.message_thread_id !== undefined ? { message_thread_id: p.message_thread_id } : {}),
  });
  state.changed();
  return true;
};
