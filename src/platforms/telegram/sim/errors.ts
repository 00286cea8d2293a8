// Telegram's error answer, {"ok":false,"error_code":N,"description":"...","parameters":{...}}, as the
// HttpError the simulator's app throws and sends with the HTTP status equal to error_code. The
// description is Telegram's own wording: the status text, a colon, the reason.
import { HttpError, typeForStatus } from "../../../http/http-error.js";
import { type BotApiAnswer, statusText } from "./wire.js";

export interface BotErrorParameters {
  retry_after?: number;
  migrate_to_chat_id?: number;
}

/** An error answer; `reason` is what follows "Bad Request: " (none for a bare "Not Found"). */
export function botError(status: number, reason?: string, parameters?: BotErrorParameters): HttpError {
  const description = reason === undefined ? statusText(status) : `${statusText(status)}: ${reason}`;
  return describedError(status, description, parameters);
}

/** An error answer with the whole description as given. */
export function describedError(
  status: number,
  description: string,
  parameters?: BotErrorParameters,
): HttpError {
  return new HttpError(
    status,
    typeForStatus(status),
    "telegram",
    description,
    {},
    {
      tenax: parameters ? { parameters } : {},
    },
  );
}

export const badRequest = (reason: string): HttpError => botError(400, reason);

/** Any error the app answers with, in Telegram's shape. */
export function botErrorBody(error: HttpError): BotApiAnswer {
  const parameters = error.details.tenax?.parameters as BotErrorParameters | undefined;
  // Fastify's own refusals (a body too large, a bad URL) carry our wording; give them the prefix.
  const prefix = `${statusText(error.status)}`;
  const description =
    error.code === "telegram" || error.message.startsWith(prefix)
      ? error.message
      : `${prefix}: ${error.message}`;
  return {
    ok: false,
    error_code: error.status,
    description,
    ...(parameters ? { parameters } : {}),
  };
}

export const chatNotFound = (): HttpError => badRequest("chat not found");
