// Reading a request body (the apps' one body parser, src/http/app.ts). A JSON body: declared as
// application/json (415 otherwise, before a byte is read), at most a fixed size (413 beyond it;
// the bytes past it are never kept), nested at most MAX_JSON_DEPTH deep, and JSON that parses
// (400 otherwise). The media type matters: a page on any web site may send a text/plain, form or
// multipart body across origins without asking first (a "simple" request), but not a JSON one.
// A `rawBody` route's text: any media type, the same size limit.
import type { Readable } from "node:stream";
import { badRequest, HttpError } from "./http-error.js";
import { depthPastLimit, MAX_JSON_DEPTH } from "./json-depth.js";

/** Largest request body the gateway reads. A conversation with pasted files fits; a dump does not. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The body of a request whose Content-Type is `contentType`, read from `payload`. */
export async function readJsonBody(
  payload: Readable,
  contentType: string | undefined,
  limit = MAX_BODY_BYTES,
): Promise<unknown> {
  requireJson(contentType);
  const bytes = await readCapped(payload, limit);
  const deep = depthPastLimit(bytes);
  if (deep >= 0)
    throw badRequest(
      "json_too_deep",
      `the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep (at byte ${deep}); send a flatter body`,
    );
  const text = bytes.toString("utf8");
  if (text.trim() === "") throw badRequest("invalid_json", "the request body is empty; send a JSON object");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(
      "invalid_json",
      `the request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The text of a body of any media type (a `rawBody` route's), at most `limit` bytes (413 beyond). */
export async function readRawBody(payload: Readable, limit = MAX_BODY_BYTES): Promise<string> {
  return (await readCapped(payload, limit)).toString("utf8");
}

/** At most `limit` bytes of `payload`; past them a 413 once the rest is read and dropped. */
async function readCapped(payload: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    // Past the limit the rest is read and dropped, so the client can read the 413 instead of
    // failing on a closed socket; a body far past it is cut off.
    if (size > limit * 16) {
      payload.destroy();
      break;
    }
    if (size <= limit) chunks.push(buffer);
  }
  if (size > limit) throw tooLarge(limit);
  return Buffer.concat(chunks);
}

/**
 * `application/json`, with at most a `charset` parameter naming UTF-8 (what the body is decoded
 * as). Hand-written: the grammar is a few lines and this is the only media type taken.
 */
export function requireJson(header: string | undefined): void {
  const problem = mediaTypeProblem(header);
  if (problem !== null) throw unsupportedMediaType(problem);
}

/** The 415 for a Content-Type that is not JSON (also when the header does not even parse). */
export function unsupportedMediaType(problem: string): HttpError {
  return new HttpError(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    `${problem}; send the body as JSON with Content-Type: application/json (charset=utf-8 allowed)`,
  );
}

/** Why `header` is not JSON's media type, or null when it is. */
export function mediaTypeProblem(header: string | undefined): string | null {
  const [type = "", ...params] = (header ?? "")
    .split(";")
    .map((part) => part.trim())
    .filter((part, i) => i === 0 || part !== "");
  const problem =
    type.toLowerCase() !== "application/json"
      ? header === undefined || header.trim() === ""
        ? "the request has no Content-Type"
        : `the request's Content-Type is ${JSON.stringify(header)}`
      : params.map(paramProblem).find((p) => p !== null);
  return problem ?? null;
}

function paramProblem(param: string): string | null {
  const eq = param.indexOf("=");
  const name = (eq < 0 ? param : param.slice(0, eq)).trim().toLowerCase();
  const value = (eq < 0 ? "" : param.slice(eq + 1))
    .trim()
    .replace(/^"(.*)"$/, "$1")
    .toLowerCase();
  if (name === "charset" && (value === "utf-8" || value === "utf8")) return null;
  if (name === "charset") return `the body's charset is ${JSON.stringify(value)}, but JSON is read as UTF-8`;
  return `application/json takes no parameter ${JSON.stringify(param)} here (only charset=utf-8)`;
}

export function tooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    "invalid_request_error",
    "request_too_large",
    `the request body is larger than ${limit} bytes; send a shorter conversation, or continue a session with X-Session-Id and only the new message`,
    { connection: "close" },
  );
}
