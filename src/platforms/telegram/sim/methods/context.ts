// What a Bot API method is given, and the helpers every method shares: its parameters checked by a
// zod schema with a failure worded as Telegram words it ("Bad Request: chat_id is empty"), and the
// chat a chat_id names.
import type { z } from "zod";
import { badRequest, chatNotFound } from "../errors.js";
import type { Params } from "../params.js";
import type { LongPolls } from "../polling.js";
import type { ChatState, TelegramSimState } from "../state.js";
import type { WebhookPusher } from "../webhook.js";

export interface MethodContext {
  state: TelegramSimState;
  polls: LongPolls;
  pusher: WebhookPusher;
  params: Params;
  /** Aborted when the call's response closes (answered, or the client went away). */
  closed: AbortSignal;
}

/** A method: the result it answers, or a thrown botError. */
export type BotMethod = (ctx: MethodContext) => unknown | Promise<unknown>;

export function parseParams<S extends z.ZodType>(schema: S, params: Params): z.output<S> {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join(".") ?? "parameters";
  if (issue && params[String(issue.path[0])] === undefined) throw badRequest(`${field} is empty`);
  throw badRequest(`invalid ${field} specified: ${issue?.message ?? "not valid"}`);
}

/** The chat a chat_id names: its number, the number as text, or @username of a known chat. */
export function chatOf(state: TelegramSimState, chatId: number | string): ChatState {
  const id = typeof chatId === "number" ? chatId : /^-?[0-9]+$/.test(chatId) ? Number(chatId) : Number.NaN;
  const chat = Number.isNaN(id)
    ? [...state.chats.values()].find((c) => `@${c.chat.username ?? ""}` === chatId)
    : state.chat(id);
  if (!chat) throw chatNotFound();
  return chat;
}
