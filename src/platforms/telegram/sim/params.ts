// A Bot API call's parameters, read the ways Telegram takes them: the query string, a JSON body, or
// an urlencoded form. Values that arrive as text (query and form) are read as JSON where they are
// JSON (numbers, booleans, objects such as reply_markup) and kept as text otherwise, which is how
// Telegram lets `chat_id=42` and `reply_markup={"inline_keyboard":...}` work in a GET.
import { badRequest } from "./errors.js";

export type Params = Record<string, unknown>;

export function readParams(query: URLSearchParams, contentType: string | undefined, raw: string): Params {
  const params: Params = {};
  for (const [key, value] of query) params[key] = fromText(value);
  if (raw.length === 0) return params;
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "application/json") {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      throw badRequest("the request body is not valid JSON");
    }
    if (body === null || typeof body !== "object" || Array.isArray(body))
      throw badRequest("the request body must be a JSON object");
    return { ...params, ...(body as Params) };
  }
  if (type === "application/x-www-form-urlencoded") {
    for (const [key, value] of new URLSearchParams(raw)) params[key] = fromText(value);
    return params;
  }
  if (type === "multipart/form-data")
    throw badRequest("multipart/form-data (file uploads) is not supported by the Tenax Telegram simulator");
  return params;
}

function fromText(value: string): unknown {
  const trimmed = value.trim();
  if (/^-?[0-9]+(\.[0-9]+)?$/.test(trimmed) || trimmed === "true" || trimmed === "false")
    return JSON.parse(trimmed) as unknown;
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      return value;
    }
  }
  return value;
}
