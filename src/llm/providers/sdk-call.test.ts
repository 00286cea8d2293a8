// The call lifecycle both SDK providers share: which exits abort the request and which only stop
// the timers, and the watched body (activity per raw piece, errors and cancels passed through).
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { type AnthropicPeer, startAnthropicPeer } from "../../../test/helpers/anthropic-peer.js";
import { countingTimers } from "../../../test/helpers/provider-stream.js";
import type { ChatRequest, Provider, ProviderEvent } from "../provider.js";
import { type Simulator, startSimulator } from "../simulator/server.js";
import { DEFAULT_TIMEOUTS, startRequestTimers } from "../timeouts.js";
import { createAnthropicProvider } from "./anthropic.js";
import { createOpenAIProvider } from "./openai.js";
import { wireFromFetch } from "./openai-wire.js";
import {
  type CallState,
  type Fetch,
  type SdkErrors,
  type SdkStream,
  sdkStreamer,
  watchedBody,
  watchedFetch,
} from "./sdk-call.js";

let sim: Simulator | undefined;
let peer: AnthropicPeer | undefined;

afterEach(async () => {
  await sim?.close();
  await peer?.close();
  sim = undefined;
  peer = undefined;
});

const hello: ChatRequest = { model: "echo", messages: [{ role: "user", content: "hello there" }] };
const encoder = new TextEncoder();

const NO_SDK_ERRORS: SdkErrors = {
  apiError: () => null,
  isConnectionError: () => false,
  isTimeoutError: () => false,
  errorBody: (parsed) => parsed,
};

/** A fetch that remembers the signal of every request it sends. */
function signalSpy(): { fetch: Fetch; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const fetch: Fetch = (input, init) => {
    if (init?.signal) signals.push(init.signal);
    return globalThis.fetch(input, init);
  };
  return { fetch, signals };
}

async function drain(stream: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function stopAtFirstText(stream: AsyncIterable<ProviderEvent>): Promise<void> {
  for await (const event of stream) if (event.type === "text") break;
}

/** A raw body that sends the given pieces, each after `gapMs`, then ends. */
function slowBody(pieces: string[], gapMs: number): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, gapMs));
        const piece = pieces[next++];
        if (piece === undefined) controller.close();
        else controller.enqueue(encoder.encode(piece));
      },
    },
    { highWaterMark: 0 },
  );
}

function callState(): CallState {
  return {
    timers: startRequestTimers(DEFAULT_TIMEOUTS),
    callerSignal: undefined,
    headersSeen: false,
    errorText: null,
    fetchError: undefined,
    connectMs: DEFAULT_TIMEOUTS.connect_ms,
  };
}

describe("sdkStreamer: what each exit does to the request", () => {
  /** A call whose SDK stream yields the given chunks (or throws `failWith` after them). */
  function fakeCall(chunks: string[], failWith?: Error) {
    const { timers, live } = countingTimers();
    const { run } = sdkStreamer({ name: "fake", baseURL: "http://unused", timers }, NO_SDK_ERRORS);
    let seen: AbortSignal | undefined;
    const events = run({ apiKey: "k" }, async (_fetch, signal): Promise<SdkStream<string>> => {
      seen = signal;
      return {
        chunks: (async function* () {
          yield* chunks;
          if (failWith) throw failWith;
        })(),
        add: (chunk) => [{ type: "text", delta: chunk }],
        finish: () => ({
          type: "done",
          finish_reason: "stop",
          text: chunks.join(""),
          tool_calls: [],
          usage: null,
        }),
        cutShort: "cut short",
      };
    });
    return { events, live, signal: () => seen };
  }

  it("only stops the timers after a stream that finished: the request is over, nothing is aborted", async () => {
    const call = fakeCall(["a", "b"]);
    const events = await drain(call.events);
    expect(events.at(-1)).toMatchObject({ type: "done", text: "ab" });
    expect(call.signal()?.aborted).toBe(false);
    expect(call.live.size).toBe(0);
  });

  it("aborts the request when the consumer stops early", async () => {
    const call = fakeCall(["a", "b", "c"]);
    await stopAtFirstText(call.events);
    expect(call.signal()?.aborted).toBe(true);
    expect(call.live.size).toBe(0);
  });

  it("aborts the request when the stream fails", async () => {
    const call = fakeCall(["a"], new Error("socket hang up"));
    const events = await drain(call.events);
    expect(events.at(-1)?.type).toBe("error");
    expect(call.signal()?.aborted).toBe(true);
    expect(call.live.size).toBe(0);
  });
});

describe("sdkStreamer with a caller's signal", () => {
  function callWith(caller: AbortSignal, chunks: string[]) {
    const { run } = sdkStreamer({ name: "fake", baseURL: "http://unused" }, NO_SDK_ERRORS);
    let seen: AbortSignal | undefined;
    const events = run(
      { apiKey: "k", signal: caller },
      async (_fetch, signal): Promise<SdkStream<string>> => {
        seen = signal;
        // What both SDKs do with the signal they are given: a listener removed only when it fires.
        signal.addEventListener("abort", () => {}, { once: true });
        return {
          chunks: (async function* () {
            for (const chunk of chunks) {
              await new Promise((resolve) => setTimeout(resolve, 1));
              yield chunk;
            }
          })(),
          add: (chunk) => [{ type: "text", delta: chunk }],
          finish: () => ({
            type: "done",
            finish_reason: "stop",
            text: chunks.join(""),
            tool_calls: [],
            usage: null,
          }),
          cutShort: "cut short",
        };
      },
    );
    return { events, signal: () => seen };
  }

  it("leaves nothing of a finished call that the garbage collector cannot take", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    // A turn's signal outlives its calls; on Node 20 a signal joined to it by AbortSignal.any with
    // the SDK's listener still on it was kept for good, with all it reaches.
    const turn = new AbortController();
    // In a function of its own, so that no frame of this test still holds the last call.
    const finishedCall = async () => {
      const call = callWith(turn.signal, ["a", "b"]);
      expect((await drain(call.events)).at(-1)).toMatchObject({ type: "done", text: "ab" });
      const signal = call.signal();
      return signal ? new WeakRef(signal) : null;
    };
    const given: WeakRef<AbortSignal>[] = [];
    for (let i = 0; i < 3; i++) {
      const ref = await finishedCall();
      if (ref) given.push(ref);
    }
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
    }
    expect(given).toHaveLength(3);
    expect(given.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
    expect(turn.signal.aborted).toBe(false);
  });

  it("passes the caller's abort on to the request, and fails the call as aborted", async () => {
    const turn = new AbortController();
    const call = callWith(turn.signal, ["a", "b", "c"]);
    const events: ProviderEvent[] = [];
    for await (const event of call.events) {
      events.push(event);
      if (event.type === "text") turn.abort(new Error("interrupted"));
    }
    expect(call.signal()?.aborted).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "error", error: { reason: "aborted" } });
  });

  it("fails at once, without a request, when the caller's signal is already aborted", async () => {
    const turn = new AbortController();
    turn.abort(new Error("interrupted"));
    const call = callWith(turn.signal, ["a"]);
    const events = await drain(call.events);
    expect(call.signal()).toBeUndefined();
    expect(events).toMatchObject([{ type: "error", error: { reason: "aborted" } }]);
  });
});

describe("both SDK providers over HTTP", () => {
  // The second reply is slow, so that the early stop comes while it is still being sent.
  const slow = { type: "reply" as const, text: "abcdefghijklmnop", chunk_size: 1, chunk_delay_ms: 30 };
  const providers: [
    string,
    () => Promise<{ provider: (fetch: Fetch) => Provider; server: Simulator | AnthropicPeer }>,
  ][] = [
    [
      "openai",
      async () => {
        sim = await startSimulator();
        sim.script([{ type: "reply", text: "fine" }, slow]);
        const url = sim.url;
        return {
          server: sim,
          provider: (fetch) =>
            createOpenAIProvider({ name: "sim", baseURL: url, request: wireFromFetch(fetch) }),
        };
      },
    ],
    [
      "anthropic",
      async () => {
        peer = await startAnthropicPeer();
        peer.script([{ type: "reply", text: "fine" }, slow]);
        const url = peer.url;
        return {
          server: peer,
          provider: (fetch) => createAnthropicProvider({ name: "peer", baseURL: url, fetch }),
        };
      },
    ],
  ];

  for (const [name, start] of providers) {
    it(`${name}: a finished stream leaves the request's signal alone; an early stop aborts it and closes the socket`, async () => {
      const { provider, server } = await start();
      const { fetch, signals } = signalSpy();
      const p = provider(fetch);

      const events = await drain(p.stream(hello, { apiKey: "k" }));
      expect(events.at(-1)?.type).toBe("done");
      expect(signals).toHaveLength(1);
      expect(signals[0]?.aborted).toBe(false);

      await stopAtFirstText(p.stream(hello, { apiKey: "k" }));
      expect(signals).toHaveLength(2);
      expect(signals[1]?.aborted).toBe(true);
      await server.idle();
      expect(server.requests().map((r) => r.ended)).toEqual(["completed", "client_closed"]);
    });
  }
});

describe("the watched body", () => {
  it("restarts the idle deadline on every raw piece, keep-alive comments included, and passes the bytes on", async () => {
    const pieces = [": keep-alive\n\n", ": keep-alive\n\n", "data: 1\n\n", "data: 2\n\n"];
    let activity = 0;
    const body = watchedBody(slowBody(pieces, 0), { activity: () => activity++ });
    expect(await new Response(body).text()).toBe(pieces.join(""));
    expect(activity).toBe(pieces.length);
  });

  it("passes an error of the original body to its reader", async () => {
    const broken = new Error("connection reset");
    let pulls = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(encoder.encode("data: 1\n\n"));
        else controller.error(broken);
      },
    });
    const reader = watchedBody(source, { activity: () => {} }).getReader();
    expect((await reader.read()).done).toBe(false);
    await expect(reader.read()).rejects.toBe(broken);
  });

  it("passes a cancel on to the original body, with its reason", async () => {
    const cancelled: unknown[] = [];
    const source = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(encoder.encode("data: 1\n\n")),
      cancel: (reason) => {
        cancelled.push(reason);
      },
    });
    const reader = watchedBody(source, { activity: () => {} }).getReader();
    await reader.read();
    await reader.cancel("the SDK stopped");
    expect(cancelled).toEqual(["the SDK stopped"]);
  });

  it("closes the connection when its reader cancels, with no signal involved", async () => {
    sim = await startSimulator();
    sim.script([{ type: "reply", text: "abcdefghijklmnop", chunk_size: 1, chunk_delay_ms: 30 }]);
    const state = callState();
    const response = await watchedFetch(globalThis.fetch, state)(`${sim.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer k" },
      body: JSON.stringify({ ...hello, stream: true }),
    });
    const reader = response.body?.getReader();
    expect((await reader?.read())?.done).toBe(false);
    await reader?.cancel();
    await sim.idle();
    state.timers.clear();
    expect(sim.requests()[0]?.ended).toBe("client_closed");
  });

  it("keeps a stream alive through keep-alive comments longer than the idle limit", async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({
        id: "c1",
        object: "chat.completion.chunk",
        created: 0,
        model: "echo",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;
    // Six comments 60 ms apart: 360 ms of thinking against an idle limit of 150 ms.
    const pieces = [
      ...Array.from({ length: 6 }, () => ": keep-alive\n\n"),
      chunk({ role: "assistant", content: "hi" }, null),
      chunk({}, "stop"),
      "data: [DONE]\n\n",
    ];
    const fetch: Fetch = async () =>
      new Response(slowBody(pieces, 60), { status: 200, headers: { "content-type": "text/event-stream" } });
    const p = createOpenAIProvider({
      name: "sim",
      baseURL: "http://unused/v1",
      request: wireFromFetch(fetch),
      timeouts: { idle_ms: 150 },
    });
    const events = await drain(p.stream(hello, { apiKey: "k" }));
    expect(events.at(-1)).toMatchObject({ type: "done", text: "hi" });
  });
});
