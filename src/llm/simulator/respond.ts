// The simulator's HTTP plumbing: JSON and error answers, request bodies, and waiting for a
// client to go away.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type ErrorType, HttpError } from "../../http/http-error.js";
import { errorBody } from "./wire.js";

type ErrorDocument = ReturnType<typeof errorBody>;

/** An OpenAI error document as the HttpError the simulator's app answers with. */
export function simError(status: number, document: ErrorDocument): HttpError {
  const { message, type, code, param } = document.error;
  // The details keep code and param as written: OpenAI sends null for the ones it has none of.
  return new HttpError(status, type as ErrorType, code ?? "", message, {}, { error: { param, code } });
}

/** Any HttpError in the simulator's error shape: message, type, param and code, null where none. */
export function simErrorBody(error: HttpError): ErrorDocument {
  const own = error.details.error ?? {};
  const code = "code" in own ? (own.code as string | null) : error.code;
  const param = typeof own.param === "string" ? own.param : null;
  return errorBody(error.message, error.type, code, param);
}

export const MAX_BODY_BYTES = 64 * 1024 * 1024;

export function modelObject(id: string): Record<string, unknown> {
  return { id, object: "model", created: 0, owned_by: "tenax-simulator" };
}

export function modelNotFound(id: string) {
  return errorBody(
    `The model \`${id}\` is not served by this simulator.`,
    "invalid_request_error",
    "model_not_found",
    "model",
  );
}

export function contextOverflow(window: number, prompt: number, reserve: number) {
  const requested = prompt + reserve;
  const split = reserve > 0 ? ` (${prompt} in the messages, ${reserve} for the completion)` : "";
  return errorBody(
    `This model's maximum context length is ${window} tokens, but the request needs ${requested} tokens${split}. Shorten the messages or the completion.`,
    "invalid_request_error",
    "context_length_exceeded",
    "messages",
  );
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
}

export function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

export function parseJson(raw: string): unknown {
  if (raw.length === 0) return null;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return null;
  }
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req) {
    const buffer = part as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
    parts.push(buffer);
  }
  return Buffer.concat(parts).toString("utf8");
}

export function waitUntilClosed(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
