// Every Bot API method the simulator answers, by name. Telegram reads method names without regard
// to case (`sendmessage` works), so the lookup lowers them; any other method is a 404 "Not Found".
import { answerCallbackQuery, deleteMyCommands, getMe, getMyCommands, setMyCommands } from "./bot.js";
import type { BotMethod } from "./context.js";
import { deleteMessage, editMessageText, sendChatAction, sendMessage } from "./messages.js";
import { deleteWebhook, getUpdates, getWebhookInfo, setWebhook } from "./updates.js";

const METHODS: Record<string, BotMethod> = {
  getMe,
  getUpdates,
  setWebhook,
  deleteWebhook,
  getWebhookInfo,
  sendMessage,
  editMessageText,
  deleteMessage,
  sendChatAction,
  answerCallbackQuery,
  setMyCommands,
  getMyCommands,
  deleteMyCommands,
};

const BY_LOWER = new Map(
  Object.entries(METHODS).map(([name, method]) => [name.toLowerCase(), { name, method }]),
);

/** The method and its canonical name, or undefined for one the simulator does not answer. */
export function findMethod(name: string): { name: string; method: BotMethod } | undefined {
  return BY_LOWER.get(name.toLowerCase());
}

export const METHOD_NAMES: readonly string[] = Object.keys(METHODS);
