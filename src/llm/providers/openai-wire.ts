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

/** POST `body` to `${baseURL}/chat/completions` and yield the stream's chunks. */
export async function openChatStream(
  request: WireRequest,
  baseURL: string,
  apiKey: string,
  body: unknown,
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
        body: JSON.stringify(body),
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
  return chunks(
    events(response.body, () => state.timers.activity()),
    response.headers,
  );
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

async function* chunks(
  stream: AsyncIterable<{ event: string | null; data: string }>,
  headers: WireResponse["headers"],
): AsyncGenerator<ChatCompletionChunk> {
  let done = false;
  for await (const { event, data } of stream) {
    // After [DONE] the body is still read to its end, so the connection serves the next call.
    if (done) continue;
    if (data === "[DONE]") {
      done = true;
      continue;
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
    yield parsed as ChatCompletionChunk;
  }
}

/** Server-sent events: `data:` lines joined until a blank line; comments and other fields skipped. */
export async function* events(
  body: AsyncIterable<Buffer>,
  onPiece: () => void,
): AsyncGenerator<{ event: string | null; data: string }> {
  const decoder = new StringDecoder("utf8");
  let buffer = "";
  let data: string[] = [];
  let event: string | null = null;
  const line = function* (text: string): Generator<{ event: string | null; data: string }> {
    if (text === "") {
      if (data.length > 0) yield { event, data: data.join("\n") };
      data = [];
      event = null;
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? "" : text.slice(text.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
  };
  for await (const piece of body) {
    onPiece();
    buffer += decoder.write(piece);
    let start = 0;
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n", start)) {
      const end = nl > start && buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      yield* line(buffer.slice(start, end));
      start = nl + 1;
    }
    buffer = buffer.slice(start);
  }
  buffer += decoder.end();
  if (buffer !== "") yield* line(buffer);
  yield* line("");
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
