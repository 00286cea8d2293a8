// What a test makes happen on Telegram's side: a user writes in a chat, or presses a button of an
// inline keyboard the bot sent. Each becomes an update (message or callback_query) in the queue.
import { TenaxError } from "../../../core/errors.js";
import type { TelegramSimState } from "./state.js";
import type { Injected, InjectMessageInput, PressButtonInput } from "./types.js";
import type { WireMessage } from "./wire.js";

export class TelegramSimInputError extends TenaxError {
  override readonly name = "TelegramSimInputError";
  constructor(message: string) {
    super("telegram_sim_input_invalid", message, { exitCode: 2 });
  }
}

export function injectMessage(state: TelegramSimState, input: InjectMessageInput): Injected {
  if (typeof input.text !== "string" || input.text.length === 0)
    throw new TelegramSimInputError("an injected message needs a non-empty text");
  const chatInput = typeof input.chat === "number" ? { id: input.chat } : input.chat;
  const chat = state.registerChat(chatInput);
  chat.lastMessageId += 1;
  const message: WireMessage = {
    message_id: chat.lastMessageId,
    from: state.user(input.from, chat.chat),
    chat: chat.chat,
    date: state.now(),
    text: input.text,
  };
  if (input.message_thread_id !== undefined) {
    message.message_thread_id = input.message_thread_id;
    if (chat.chat.is_forum) message.is_topic_message = true;
  }
  if (input.reply_to_message_id !== undefined) {
    const replied = chat.messages.get(input.reply_to_message_id);
    if (!replied)
      throw new TelegramSimInputError(
        `chat ${chat.chat.id} has no message ${input.reply_to_message_id} to reply to`,
      );
    message.reply_to_message = withoutReply(replied);
  }
  chat.messages.set(message.message_id, message);
  const update_id = state.push((id) => ({ update_id: id, message }), "message");
  return { update_id, message };
}

export function pressButton(state: TelegramSimState, input: PressButtonInput): Injected {
  const chat = state.chat(input.chat_id);
  if (!chat) throw new TelegramSimInputError(`the simulator knows no chat ${input.chat_id}`);
  const sent = chat.sent.find((m) => m.message_id === input.message_id && !m.deleted);
  if (!sent)
    throw new TelegramSimInputError(`the bot sent no message ${input.message_id} in chat ${input.chat_id}`);
  const buttons = (sent.reply_markup?.inline_keyboard ?? []).flat();
  if (!buttons.some((b) => b.callback_data === input.data)) {
    const known = buttons.map((b) => b.callback_data).filter((d) => d !== undefined);
    throw new TelegramSimInputError(
      `message ${input.message_id} in chat ${input.chat_id} has no button with callback_data ${JSON.stringify(input.data)}; it has ${known.length === 0 ? "none" : known.map((d) => JSON.stringify(d)).join(", ")}`,
    );
  }
  const id = state.newCallbackId();
  state.callbackQueries.set(id, {
    id,
    data: input.data,
    chat_id: input.chat_id,
    message_id: input.message_id,
    answered: false,
  });
  const callback_query = {
    id,
    from: state.user(input.from, chat.chat),
    message: sent.wire,
    chat_instance: chat.instance,
    data: input.data,
  };
  const update_id = state.push((updateId) => ({ update_id: updateId, callback_query }), "callback_query");
  return { update_id, callback_query_id: id };
}

export function withoutReply(message: WireMessage): WireMessage {
  const { reply_to_message: _, ...rest } = message;
  return rest;
}
