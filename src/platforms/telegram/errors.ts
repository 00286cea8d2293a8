// What a failed Bot API call means for the message behind it, from grammY's two errors: a
// GrammyError is Telegram's own answer (`error_code`, `description`, `parameters`), an HttpError
// is a call that never got one (refused, reset, timed out). Network trouble, 5xx and 429 are
// worth another attempt (429 after exactly `retry_after`); a formatting rejection is sent again
// as plain text at once; the rest (a bad token, a chat that blocked the bot) will not get better.
import { GrammyError, HttpError } from "grammy";

export interface TelegramFailure {
  /** Short and stable: `network`, `server_error`, `rate_limited`, `bad_formatting`, `not_modified`, `rejected`, `unauthorized`, `conflict`. */
  code: string;
  retryable: boolean;
  /** Telegram's `retry_after`, in ms, when it gave one. */
  retryAfterMs: number | null;
  /** The text's formatting was refused: send it again without parse_mode. */
  plainText: boolean;
  /** A group became a supergroup: the chat to send to instead. */
  migrateTo: number | null;
  /** For people: the method and Telegram's description, or the network error. */
  message: string;
}

export function classifyTelegramError(error: unknown): TelegramFailure {
  const base = { retryAfterMs: null, plainText: false, migrateTo: null };
  if (error instanceof GrammyError) {
    const message = `Telegram ${error.method}: ${error.error_code} ${error.description}`;
    const status = error.error_code;
    const migrateTo = error.parameters.migrate_to_chat_id ?? null;
    if (migrateTo !== null) return { ...base, code: "migrated", retryable: true, migrateTo, message };
    if (status === 429) {
      const after = error.parameters.retry_after;
      return {
        ...base,
        code: "rate_limited",
        retryable: true,
        retryAfterMs: typeof after === "number" ? after * 1000 : null,
        message,
      };
    }
    if (status >= 500) return { ...base, code: "server_error", retryable: true, message };
    if (status === 400 && /can't parse entities|can't find end of the entity/i.test(error.description))
      return { ...base, code: "bad_formatting", retryable: true, plainText: true, message };
    if (status === 400 && /message is not modified/i.test(error.description))
      return { ...base, code: "not_modified", retryable: false, message };
    if (status === 401 || status === 404)
      return {
        ...base,
        code: "unauthorized",
        retryable: false,
        message: `${message} (is the bot token right?)`,
      };
    if (status === 409) return { ...base, code: "conflict", retryable: true, message };
    return { ...base, code: "rejected", retryable: false, message };
  }
  if (error instanceof HttpError) {
    const cause = error.error instanceof Error ? error.error.message : String(error.error);
    return { ...base, code: "network", retryable: true, message: `${error.message}: ${cause}` };
  }
  return {
    ...base,
    code: "network",
    retryable: true,
    message: error instanceof Error ? error.message : String(error),
  };
}
