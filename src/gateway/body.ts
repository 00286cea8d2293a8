// Reading a request body: at most a fixed size (413 beyond it; the bytes past it are never kept),
// nested at most MAX_JSON_DEPTH deep and JSON that parses (400 otherwise).
import type { IncomingMessage } from "node:http";
import { badRequest, GatewayError } from "./http-error.js";
import { depthPastLimit, MAX_JSON_DEPTH } from "./json-depth.js";

/** Largest request body the gateway reads. A conversation with pasted files fits; a dump does not. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    // Past the limit the rest is read and dropped, so the client can read the 413 instead of
    // failing on a closed socket; a body far past it is cut off.
    if (size > limit * 16) {
      req.destroy();
      break;
    }
    if (size <= limit) chunks.push(buffer);
  }
  if (size > limit) throw tooLarge(limit);
  const bytes = Buffer.concat(chunks);
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

function tooLarge(limit: number): GatewayError {
  return new GatewayError(
    413,
    "invalid_request_error",
    "request_too_large",
    `the request body is larger than ${limit} bytes; send a shorter conversation, or continue a session with X-Session-Id and only the new message`,
    { connection: "close" },
  );
}
