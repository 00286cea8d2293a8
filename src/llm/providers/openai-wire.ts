// One streamed Chat Completions call on the wire, with undici's request API: a JSON body out, a
// server-sent event stream back. The format is small and stable; going through the SDK and
// fetch (its request building, Request and Response objects and web streams) cost about 0.75 ms
// of CPU a call, more than the rest of a gateway turn (docs/PERFORMANCE.md). The call reports to
// the shared call state as the SDK path does (headers seen, each raw piece of the body, an error
// response's text), and throws the errors `OPENAI_WIRE_ERRORS` tells the classifier about.
import { StringDecoder } from "node:string_decoder";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { dispatcherFor } from "./default-fetch.js";
import type { CallState, SdkErrors } from "./sdk-call.js";

export interface WireResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer> & { text(): Promise<string> };
}

/** Sends one POST; the default is undici's request on the shared pool (tests may inject one). */
export type WireRequest = (
  url: URL,
  init: { headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<WireResponse>;

export function defaultWireRequest(connectMs: number): WireRequest {
  return async (url, init) => {
    const dispatcher = await dispatcherFor(connectMs);
    return dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers: init.headers,
      body: init.body,
      signal: init.signal,
    });
  };
}

/** The server answered with an error status, or sent an error inside its 200 stream. */
export class WireApiError extends Error {
  constructor(
    readonly status: number | undefined,
    readonly headers: Headers,
    /** The `error` object of the body, as the classifier reads it. */
    readonly error: unknown,
  ) {
    super(status === undefined ? "an error event in the stream" : `the server answered ${status}`);
    this.name = "WireApiError";
  }
}

/** The request never got an answer (refused, reset, DNS, the connect limit): its cause says which. */
export class WireConnectionError extends Error {
  constructor(cause: unknown) {
    super(`the request failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "WireConnectionError";
  }
}

export const OPENAI_WIRE_ERRORS: SdkErrors = {
  apiError: (error) => (error instanceof WireApiError ? error : null),
  isConnectionError: (error) => error instanceof WireConnectionError,
  // The whole-request, first-byte and idle limits are the call's own timers, classified first.
  isTimeoutError: () => false,
  errorBody: (parsed) => ({ error: parsed }),
};

/** POST `body` (JSON text) to `${baseURL}/chat/completions` and yield the stream's chunks. */
export async function openChatStream(
  request: WireRequest,
  baseURL: string,
  apiKey: string,
  body: string,
  signal: AbortSignal,
  state: CallState,
): Promise<AsyncGenerator<ChatCompletionChunk>> {
  const url = new URL(`${baseURL.replace(/\/+$/, "")}/chat/completions`);
  let response: WireResponse;
  try {
    response = await abortable(
      request(url, {
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          authorization: `Bearer ${apiKey}`,
        },
        body,
        signal,
      }),
      signal,
    );
  } catch (error) {
    state.fetchError = error;
    // An abort (ours or the caller's) is classified from the signals; anything else never connected.
    if (signal.aborted) throw error;
    throw new WireConnectionError(error);
  }
  state.headersSeen = true;
  state.timers.headers();
  if (response.statusCode < 200 || response.statusCode >= 300) {
    state.errorText = await response.body.text();
    throw new WireApiError(response.statusCode, toHeaders(response.headers), errorField(state.errorText));
  }
  return chunks(response.body, () => state.timers.activity(), response.headers);
}

/**
 * The request, or the signal's reason as soon as it aborts: undici's request notices an abort
 * only once its connection is made, so a caller who gives up while connecting would wait out the
 * connect limit. A response that still comes is discarded.
 */
function abortable(pending: Promise<WireResponse>, signal: AbortSignal): Promise<WireResponse> {
  if (signal.aborted) {
    pending.then(discard, () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      pending.then(discard, () => {});
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(
      (response) => {
        signal.removeEventListener("abort", onAbort);
        resolve(response);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function discard(response: WireResponse): void {
  (response.body as { destroy?: () => void }).destroy?.();
}

/** The stream's chunks, each as soon as its event is whole; an error event or garbled data throws. */
async function* chunks(
  body: AsyncIterable<Buffer>,
  onPiece: () => void,
  headers: WireResponse["headers"],
): AsyncGenerator<ChatCompletionChunk> {
  const parser = new SseParser();
  let done = false;
  const chunkOf = ({ event, data }: SseEvent): ChatCompletionChunk | null => {
    // After [DONE] the body is still read to its end, so the connection serves the next call.
    if (done) return null;
    if (data === "[DONE]") {
      done = true;
      return null;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      // A SyntaxError, as the classifier knows a garbled body (format_error).
      throw new SyntaxError(`the stream sent an event that is not JSON: ${data.slice(0, 200)}`);
    }
    const error = (parsed as { error?: unknown } | null)?.error;
    if (event === "error" || (error !== undefined && error !== null))
      throw new WireApiError(undefined, toHeaders(headers), error ?? parsed);
    return parsed as ChatCompletionChunk;
  };
  for await (const piece of body) {
    onPiece();
    for (const event of parser.push(piece)) {
      const chunk = chunkOf(event);
      if (chunk !== null) yield chunk;
    }
  }
  for (const event of parser.end()) {
    const chunk = chunkOf(event);
    if (chunk !== null) yield chunk;
  }
}

export interface SseEvent {
  event: string | null;
  data: string;
}

/** Server-sent events: `data:` lines joined until a blank line; comments and other fields skipped. */
export class SseParser {
  private readonly decoder = new StringDecoder("utf8");
  private buffer = "";
  private data: string[] = [];
  private event: string | null = null;

  /** The events this piece of the body completes. */
  push(piece: Buffer): SseEvent[] {
    const out: SseEvent[] = [];
    const buffer = this.buffer + this.decoder.write(piece);
    let start = 0;
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n", start)) {
      const end = nl > start && buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      this.line(buffer.slice(start, end), out);
      start = nl + 1;
    }
    this.buffer = buffer.slice(start);
    return out;
  }

  /** The body ended: the event its last lines held, even without the blank line after them. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    const rest = this.buffer + this.decoder.end();
    this.buffer = "";
    if (rest !== "") this.line(rest, out);
    this.line("", out);
    return out;
  }

  private line(text: string, out: SseEvent[]): void {
    if (text === "") {
      if (this.data.length > 0) out.push({ event: this.event, data: this.data.join("\n") });
      this.data = [];
      this.event = null;
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? "" : text.slice(text.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
  }
}

function toHeaders(raw: WireResponse["headers"]): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  return headers;
}

/** The `error` object of an error body, when it is JSON with one. */
function errorField(text: string): unknown {
  try {
    const parsed = JSON.parse(text) as { error?: unknown } | null;
    return parsed?.error ?? parsed ?? undefined;
  } catch {
    return undefined;
  }
}

/** A request sent through a fetch (a canned or spying one, in tests and benchmarks). */
export function wireFromFetch(
  fetch: (input: string | URL, init?: RequestInit) => Promise<Response>,
): WireRequest {
  return async (url, init) => {
    const response = await fetch(url, { method: "POST", ...init });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = response.body;
    return {
      statusCode: response.status,
      headers,
      body: {
        async *[Symbol.asyncIterator]() {
          if (body === null) return;
          for await (const piece of body) yield Buffer.from(piece);
        },
        text: () => response.text(),
      },
    };
  };
}
