// The bot's own settings and answers: getMe, answerCallbackQuery, and the command menu
// (setMyCommands, getMyCommands, deleteMyCommands, kept per scope and language).
import { z } from "zod";
import { badRequest } from "../errors.js";
import { type BotMethod, parseParams } from "./context.js";

export const getMe: BotMethod = ({ state }) => ({
  ...state.botUser,
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
});

const answerSchema = z.looseObject({
  callback_query_id: z.string().min(1),
  text: z.string().max(200).optional(),
  show_alert: z.boolean().optional(),
  url: z.string().optional(),
  cache_time: z.number().int().optional(),
});

export const answerCallbackQuery: BotMethod = ({ state, params }) => {
  const p = parseParams(answerSchema, params);
  const query = state.callbackQueries.get(p.callback_query_id);
  // Telegram gives the same answer for an id it never made and for one already answered.
  if (!query || query.answered)
    throw badRequest("query is too old and response timeout expired or query ID is invalid");
  query.answered = true;
  state.callbackAnswers.push({
    callback_query_id: query.id,
    data: query.data,
    chat_id: query.chat_id,
    message_id: query.message_id,
    at: state.clock.now(),
    ...(p.text !== undefined ? { text: p.text } : {}),
    ...(p.show_alert !== undefined ? { show_alert: p.show_alert } : {}),
    ...(p.url !== undefined ? { url: p.url } : {}),
  });
  state.changed();
  return true;
};

const command = z.looseObject({ command: z.string(), description: z.string() });
const scopeSchema = z.looseObject({
  scope: z.looseObject({ type: z.string() }).optional(),
  language_code: z.string().optional(),
});
const setCommandsSchema = scopeSchema.extend({ commands: z.array(command).max(100) });

const scopeKey = (p: z.infer<typeof scopeSchema>): string =>
  JSON.stringify([p.scope ?? { type: "default" }, p.language_code ?? ""]);

export const setMyCommands: BotMethod = ({ state, params }) => {
  const p = parseParams(setCommandsSchema, params);
  for (const c of p.commands) {
    if (!/^[a-z0-9_]{1,32}$/.test(c.command)) throw badRequest("BOT_COMMAND_INVALID");
    if (c.description.trim().length === 0 || c.description.length > 256)
      throw badRequest("command description is empty or too long");
  }
  state.commands.set(
    scopeKey(p),
    p.commands.map((c) => ({ command: c.command, description: c.description })),
  );
  state.changed();
  return true;
};

export const getMyCommands: BotMethod = ({ state, params }) =>
  state.commands.get(scopeKey(parseParams(scopeSchema, params))) ?? [];

export const deleteMyCommands: BotMethod = ({ state, params }) => {
  state.commands.delete(scopeKey(parseParams(scopeSchema, params)));
  state.changed();
  return true;
};
