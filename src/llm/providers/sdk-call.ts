// What both SDK-based providers share around one call: a fetch that watches the response, and
// the turning of whatever the SDK threw into one classified failure, timers and aborts first.

import { type Clock, systemClock } from "../../core/deps.js";
import type { ClassifiedError, ProviderFailure } from "../classified-error.js";
import { classify } from "../classify.js";
import type { ProviderEvent, StreamOptions } from "../provider.js";
import {
  checkTimeouts,
  DEFAULT_TIMEOUTS,
  type RequestTimers,
  realTimers,
  startRequestTimers,
  type Timeouts,
  type TimerDeps,
} from "../timeouts.js";
import { CONNECT_TIMEOUT_CODE, defaultFetch, isConnectTimeout } from "./default-fetch.js";

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export type Phase = NonNullable<ProviderFailure["phase"]>;

/** What one call knows when it fails: how far it got and what it captured on the way. */
export interface CallState {
  timers: RequestTimers;
  callerSignal: AbortSignal | undefined;
  headersSeen: boolean;
  /** The raw text of an error response, read before the SDK parses it. */
  errorText: string | null;
  /** What fetch itself threw: the SDKs replace a timeout with their own error and drop the cause. */
  fetchError: unknown;
  /** The connect limit, for the message of a connect timeout. */
  connectMs: number;
  /** The provider's base URL, so a call that reached nothing says where it tried. */
  endpoint?: string;
  /** The model asked for, so an error naming it is told apart (a rate limit for that model only). */
  model?: string;
}

/** How one SDK's errors look: its API error, its connection errors, and its error-body shape. */
export interface SdkErrors {
  apiError(
    error: unknown,
  ): { status?: number | undefined; headers?: Headers | undefined; error?: unknown } | null;
  isConnectionError(error: unknown): boolean;
  isTimeoutError(error: unknown): boolean;
  /** The body the classifier reads, from the SDK's parsed `error` field. */
  errorBody(parsed: unknown): unknown;
}

/** The options every SDK-based provider takes besides its own. */
export interface SdkProviderOptions {
  name: string;
  baseURL: string;
  timeouts?: Partial<Timeouts>;
  fetch?: Fetch;
  clock?: Clock;
  timers?: TimerDeps;
}

/** What a provider hands the shared call loop once its SDK stream is open. */
export interface SdkStream<Chunk> {
  chunks: AsyncIterable<Chunk>;
  /** The events one chunk of the SDK's stream yields. */
  add(chunk: Chunk): Iterable<ProviderEvent>;
  /** The final `done` event, or null when the stream ended without its last event. */
  finish(): ProviderEvent | null;
  /** What a stream that ended without its last event means, for the error. */
  cutShort: string;
}

/**
 * Opens one call under the given signal: the SDK client with our watching fetch, or a client of
 * our own (the OpenAI wire) that reports to the call's state itself.
 */
export type OpenSdkStream<Chunk> = (
  fetch: Fetch,
  signal: AbortSignal,
  state: CallState,
) => Promise<SdkStream<Chunk>>;

/**
 * The lifecycle every SDK provider shares: our timers joined with the caller's signal, the
 * chunks turned into events, exactly one final `done` or `error`, the timers stopped on every exit,
 * and the request aborted on every exit but a finished one (a consumer that stops early included).
 * It never throws.
 */
export function sdkStreamer(options: SdkProviderOptions, errors: SdkErrors) {
  const timeouts = checkTimeouts({ ...DEFAULT_TIMEOUTS, ...options.timeouts });
  const baseFetch: Fetch = options.fetch ?? defaultFetch(timeouts.connect_ms);
  const clock = options.clock ?? systemClock;
  const timerDeps = options.timers ?? realTimers;

  async function* run<Chunk>(
    call: StreamOptions,
    open: OpenSdkStream<Chunk>,
    model?: string,
  ): AsyncGenerator<ProviderEvent> {
    const state: CallState = {
      ...(model === undefined ? {} : { model }),
      timers: startRequestTimers(timeouts, timerDeps),
      callerSignal: call.signal,
      headersSeen: false,
      errorText: null,
      fetchError: undefined,
      connectMs: timeouts.connect_ms,
      endpoint: options.baseURL,
    };
    // The caller's abort reaches the request through the timers' own signal, not AbortSignal.any:
    // Node 20 keeps a signal made by AbortSignal.any alive for good while an abort listener is on
    // it, the SDKs remove theirs only when it fires, and a finished call never fires it (about
    // 2.5 KB held per call, for the life of the process).
    const signal = state.timers.signal;
    const onCallerAbort = () => state.timers.release();
    call.signal?.addEventListener("abort", onCallerAbort, { once: true });
    let last: ProviderEvent | null = null;
    let bodyDone = false;
    try {
      if (call.signal?.aborted) throw call.signal.reason;
      if (signal.aborted) throw signal.reason;
      const stream = await open(watchedFetch(baseFetch, state), signal, state);
      for await (const chunk of stream.chunks) {
        for (const event of stream.add(chunk)) yield event;
      }
      // The SDKs end an aborted stream quietly: an abort of ours or the caller's is still a failure.
      if (signal.aborted) throw signal.reason;
      // The SDK read the body to its end: the request is over, with nothing left to abort.
      bodyDone = true;
      last = stream.finish() ?? {
        type: "error",
        error: failed(state, { name: "StreamEndedError", message: stream.cutShort }),
      };
    } catch (error) {
      last = { type: "error", error: classifyThrown(error, state, clock.now(), errors) };
    } finally {
      call.signal?.removeEventListener("abort", onCallerAbort);
      // Runs on every exit, including a consumer that stops early: no timer or socket outlives the
      // call. Aborting a finished request would only wake the SDK's and the HTTP client's abort
      // handling (an error built at each step) for nothing, so a finished one is only cleared.
      if (bodyDone) state.timers.clear();
      else state.timers.release();
    }
    yield last;
  }

  // The SDK's own whole-request timeout is ours, so that the SDK never gives up before we do.
  return { run, totalMs: timeouts.total_ms };
}

/**
 * What both SDK clients are built with for one call: the key of this call, the SDK's own retries
 * off (retrying is the resilience layer's job), our whole-request limit and our watching fetch.
 */
export function sdkClientOptions(baseURL: string, apiKey: string, totalMs: number, fetch: Fetch) {
  return { baseURL, apiKey, maxRetries: 0, timeout: totalMs, logLevel: "off" as const, fetch };
}

/** Wraps fetch to see the moment headers arrive, every piece of the body, and an error's raw text. */
export function watchedFetch(base: Fetch, state: CallState): Fetch {
  return async (input, init) => {
    let response: Response;
    try {
      response = await base(input, init);
    } catch (error) {
      state.fetchError = error;
      throw error;
    }
    state.headersSeen = true;
    state.timers.headers();
    if (!response.ok) {
      state.errorText = await response.text();
      return new Response(state.errorText, response);
    }
    if (response.body === null) return response;
    return new Response(watchedBody(response.body, state.timers), response);
  };
}

/**
 * The body as the SDK reads it, restarting the idle deadline on every raw piece (so a server's
 * keep-alive comments while the model thinks count as activity). It pulls from the original
 * body's reader, one piece per read, which costs less than piping through a TransformStream; an
 * error of the original reaches the reader, and a cancel reaches the original, closing the socket.
 */
export function watchedBody(
  body: ReadableStream<Uint8Array>,
  timers: Pick<RequestTimers, "activity">,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // A rejected read rejects pull, which errors this stream with the same reason.
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        timers.activity();
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Nothing is read ahead of the SDK: each read of it is one read of the original.
    { highWaterMark: 0 },
  );
}

export function classifyThrown(
  error: unknown,
  state: CallState,
  now: number,
  sdk: SdkErrors,
): ClassifiedError {
  const phase: Phase = state.headersSeen ? "stream" : "headers";
  const fired = state.timers.fired();
  if (fired !== null) {
    // Our own deadline: a timeout before the headers, a dropped stream after them.
    return classify(
      {
        status: null,
        headers: {},
        body: null,
        transport: {
          name: "TimeoutError",
          code: "ETIMEDOUT",
          message: `no ${fired === "idle" ? "chunk" : "answer"} within the ${fired} limit of ${state.timers.limit(fired)} ms`,
        },
        phase: fired === "idle" ? "stream" : phase,
      },
      now,
    );
  }
  if (state.callerSignal?.aborted) {
    return classify({ status: null, headers: {}, body: null, aborted: true, phase }, now);
  }
  if (isConnectTimeout(state.fetchError) || isConnectTimeout(error)) {
    // The handshake never finished: retryable like any timeout, and named after the limit it broke.
    return classify(
      {
        status: null,
        headers: {},
        body: null,
        transport: {
          name: "ConnectTimeoutError",
          code: CONNECT_TIMEOUT_CODE,
          message: `could not connect within the connect limit of ${state.connectMs} ms`,
        },
        phase: "connect",
      },
      now,
    );
  }
  const api = sdk.apiError(error);
  if (api !== null && typeof api.status === "number") {
    return classify(
      {
        status: api.status,
        headers: headerRecord(api.headers),
        body: state.errorText ?? (api.error === undefined ? null : sdk.errorBody(api.error)),
        phase: "headers",
        model: state.model ?? null,
      },
      now,
    );
  }
  if (api !== null && api.error !== undefined) {
    // An error event inside a 200 stream: its body carries the real reason.
    return classify(
      {
        status: null,
        headers: headerRecord(api.headers),
        body: sdk.errorBody(api.error),
        phase,
        model: state.model ?? null,
      },
      now,
    );
  }
  const transport = describeTransport(error);
  const connect = sdk.isConnectionError(error) && !state.headersSeen;
  const timedOut = sdk.isTimeoutError(error);
  return classify(
    {
      status: null,
      headers: {},
      body: null,
      transport: timedOut ? { ...transport, name: "TimeoutError", code: "ETIMEDOUT" } : transport,
      phase: connect && !timedOut ? "connect" : phase,
      endpoint: state.endpoint ?? null,
    },
    now,
  );
}

export function failed(state: CallState, transport: { name: string; message: string }): ClassifiedError {
  return classify({
    status: null,
    headers: {},
    body: null,
    transport,
    phase: state.headersSeen ? "stream" : "headers",
    endpoint: state.endpoint ?? null,
  });
}

/** The innermost useful name, code and message along an error's cause chain (undici nests them). */
export function describeTransport(error: unknown): { name: string; code?: string; message: string } {
  let name = "Error";
  let code: string | undefined;
  let message = String(error);
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const record = current as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
    if (typeof record.name === "string" && depth === 0) name = record.name;
    if (typeof record.message === "string" && record.message !== "") message = record.message;
    if (typeof record.code === "string") {
      code = record.code;
      if (typeof record.name === "string") name = record.name;
    }
    current = record.cause;
  }
  return code === undefined ? { name, message } : { name, code, message };
}

export function headerRecord(headers: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  headers?.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}
