import { afterEach, describe, expect, it } from "vitest";
import { collectStream, countingTimers, errorOf } from "../../../test/helpers/provider-stream.js";
import type { ChatRequest, ProviderEvent, StreamOptions } from "../provider.js";
import { type Simulator, startSimulator } from "../simulator/server.js";
import type { Timeouts } from "../timeouts.js";
import { createOpenAIProvider } from "./openai.js";

let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(models?: Record<string, { context_window: number }>): Promise<Simulator> {
  sim = await startSimulator(models ? { models } : {});
  return sim;
}

const hello: ChatRequest = { model: "echo", messages: [{ role: "user", content: "hello there" }] };

function provider(s: Simulator, timeouts: Partial<Timeouts> = {}) {
  return createOpenAIProvider({ name: "sim", baseURL: s.url, timeouts });
}

/** Consume a whole stream, checking the stream contract (see collectStream). */
function collect(
  s: Simulator,
  request: ChatRequest = hello,
  options: Partial<StreamOptions> = {},
  timeouts: Partial<Timeouts> = {},
  onEvent?: (event: ProviderEvent) => void,
): Promise<ProviderEvent[]> {
  return collectStream(provider(s, timeouts), request, { apiKey: "sk-test-1", ...options }, onEvent);
}

function finalOf(events: ProviderEvent[]) {
  return events.at(-1);
}

describe("openai provider against the simulator", () => {
  it("streams a plain reply as text deltas, usage, then done", async () => {
    const s = await start();
    s.script([{ type: "reply", text: "abcdefghij", chunk_size: 4 }]);
    const events = await collect(s);
    const deltas = events.flatMap((e) => (e.type === "text" ? [e.delta] : []));
    expect(deltas).toEqual(["abcd", "efgh", "ij"]);
    const usage = events.find((e) => e.type === "usage");
    expect(usage).toEqual({ type: "usage", input_tokens: 3, output_tokens: 3 });
    expect(finalOf(events)).toEqual({
      type: "done",
      finish_reason: "stop",
      text: "abcdefghij",
      tool_calls: [],
      usage: { input_tokens: 3, output_tokens: 3 },
    });
    const [record] = s.requests();
    expect(record?.headers.authorization).toBe("Bearer sk-test-1");
    expect(record?.body).toMatchObject({
      model: "echo",
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it("sends tools, history and the output budget in the OpenAI shape", async () => {
    const s = await start();
    await collect(s, {
      model: "echo",
      max_output_tokens: 50,
      tools: [{ name: "now", description: "the time", parameters: { type: "object", properties: {} } }],
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "time?" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "now", arguments: "{}" }] },
        { role: "tool", content: "12:00", tool_call_id: "c1" },
      ],
    });
    expect(s.requests()[0]?.body).toMatchObject({
      max_tokens: 50,
      tools: [{ type: "function", function: { name: "now", description: "the time" } }],
      messages: [
        { role: "system" },
        { role: "user" },
        { role: "assistant", tool_calls: [{ id: "c1", type: "function", function: { name: "now" } }] },
        { role: "tool", tool_call_id: "c1", content: "12:00" },
      ],
    });
  });

  it("assembles tool calls from their deltas and emits each once, complete", async () => {
    const s = await start();
    s.script([
      {
        type: "tool_calls",
        text: "let me look",
        calls: [
          { name: "read_file", arguments: { path: "/tmp/a.txt" } },
          { id: "call_x", name: "shell", arguments: '{"cmd":"ls -la"}' },
        ],
        chunk_size: 3,
      },
    ]);
    const events = await collect(s);
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls.map((c) => [c.id, c.name, JSON.parse(c.arguments)])).toEqual([
      ["call_sim1_0", "read_file", { path: "/tmp/a.txt" }],
      ["call_x", "shell", { cmd: "ls -la" }],
    ]);
    const done = finalOf(events);
    expect(done).toMatchObject({ type: "done", finish_reason: "tool_calls", text: "let me look" });
    expect(done?.type === "done" ? done.tool_calls.map((c) => c.name) : []).toEqual(["read_file", "shell"]);
  });

  it("passes finish_reason length through unchanged", async () => {
    const s = await start();
    s.script([{ type: "reply", text: "cut sh", finish_reason: "length" }]);
    expect(finalOf(await collect(s))).toMatchObject({
      type: "done",
      finish_reason: "length",
      text: "cut sh",
    });
  });

  it("classifies a 429 with retry-after as a rate limit with the provider's delay", async () => {
    const s = await start();
    s.script([{ type: "error", status: 429, headers: { "retry-after": "3" } }]);
    const error = errorOf(await collect(s));
    expect(error).toMatchObject({ reason: "rate_limit", retry_after_ms: 3000, status: 429, retryable: true });
  });

  it("classifies a 401 as auth", async () => {
    const s = await start();
    s.script([
      {
        type: "error",
        status: 401,
        body: {
          error: {
            message: "Incorrect API key provided",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        },
      },
    ]);
    expect(errorOf(await collect(s))).toMatchObject({ reason: "auth", rotate_credential: true, status: 401 });
  });

  it("classifies a raw text error body from the response itself", async () => {
    const s = await start();
    s.script([{ type: "error", status: 502, text: "<html>Bad Gateway</html>" }]);
    expect(errorOf(await collect(s))).toMatchObject({ reason: "server_error", status: 502 });
  });

  it("classifies a request over the model's window as context_overflow with compress", async () => {
    const s = await start({ small: { context_window: 100 } });
    const events = await collect(s, {
      model: "small",
      messages: [{ role: "user", content: "x".repeat(500) }],
    });
    expect(errorOf(events)).toMatchObject({ reason: "context_overflow", compress: true, status: 400 });
  });

  it("ends a hang before headers as a timeout once first_byte_ms passes, closing the connection", async () => {
    const s = await start();
    s.script([{ type: "hang", phase: "before_headers" }]);
    const started = Date.now();
    const events = await collect(s, hello, {}, { first_byte_ms: 200 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(errorOf(events)).toMatchObject({ reason: "timeout", retryable: true });
    await s.idle();
    expect(s.requests()[0]?.ended).toBe("client_closed");
  });

  it("ends a hang mid-stream as a stream_drop once idle_ms passes", async () => {
    const s = await start();
    s.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const events = await collect(s, hello, {}, { idle_ms: 200 });
    expect(events.some((e) => e.type === "text")).toBe(true);
    expect(errorOf(events)).toMatchObject({ reason: "stream_drop" });
    await s.idle();
    expect(s.requests()[0]?.ended).toBe("client_closed");
  });

  it("ends a slow stream that outlives total_ms, and not as an abort", async () => {
    const s = await start();
    s.script([{ type: "reply", text: "abcdefgh", chunk_size: 1, chunk_delay_ms: 100 }]);
    const events = await collect(s, hello, {}, { total_ms: 300, idle_ms: 1_000 });
    expect(errorOf(events).reason).toBe("stream_drop");
  });

  it("classifies a dropped connection as stream_drop", async () => {
    const s = await start();
    s.script([{ type: "drop", after_chunks: 2 }]);
    expect(errorOf(await collect(s)).reason).toBe("stream_drop");
  });

  it("keeps connections for later calls after a finished stream, and closes one when the consumer stops early", async () => {
    const s = await start();
    const slow = { type: "reply" as const, text: "abcdefghijklmnop", chunk_size: 1, chunk_delay_ms: 30 };
    const texts = ["one", "two", "three", "four", "five", "six"];
    s.script([...texts.map((text) => ({ type: "reply" as const, text })), slow]);
    const p = provider(s);
    for (const text of texts) {
      const events: ProviderEvent[] = [];
      for await (const event of p.stream(hello, { apiKey: "k" })) events.push(event);
      expect(finalOf(events)).toMatchObject({ type: "done", text });
    }
    for await (const event of p.stream(hello, { apiKey: "k" })) if (event.type === "text") break;
    await s.idle();
    expect(s.requests().map((r) => r.ended)).toEqual([...texts.map(() => "completed"), "client_closed"]);
    // Finished calls read their bodies to the end, so their connections serve the next ones.
    const ports = new Set(
      s
        .requests()
        .slice(0, texts.length)
        .map((r) => r.remote_port),
    );
    expect(ports.size).toBeLessThanOrEqual(2);
  });

  it("classifies a malformed chunk as format_error", async () => {
    const s = await start();
    s.script([{ type: "malformed", after_chunks: 1 }]);
    expect(errorOf(await collect(s)).reason).toBe("format_error");
  });

  it("classifies a refused connection as a transport failure, not a throw", async () => {
    const s = await start();
    const url = s.url;
    await s.close();
    sim = undefined;
    const events: ProviderEvent[] = [];
    const p = createOpenAIProvider({ name: "gone", baseURL: url });
    for await (const event of p.stream(hello, { apiKey: "k" })) events.push(event);
    expect(events).toHaveLength(1);
    expect(errorOf(events)).toMatchObject({ reason: "unreachable", status: null });
    expect(errorOf(events).message).toBe(
      `could not connect to ${url} (connection refused): is the provider running?`,
    );
  });

  it("ends as aborted when the caller aborts mid-stream, and sends nothing after", async () => {
    const s = await start();
    s.script([{ type: "reply", text: "abcdefghijklmnop", chunk_size: 1, chunk_delay_ms: 30 }]);
    const controller = new AbortController();
    const events = await collect(s, hello, { signal: controller.signal }, {}, (event) => {
      if (event.type === "text") controller.abort();
    });
    expect(errorOf(events)).toMatchObject({ reason: "aborted", retryable: false });
    await s.idle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(s.requests()).toHaveLength(1);
    expect(s.requests()[0]?.ended).toBe("client_closed");
  });

  it("ends as aborted without a request when the caller's signal fired already", async () => {
    const s = await start();
    const events = await collect(s, hello, { signal: AbortSignal.abort() });
    expect(events).toHaveLength(1);
    expect(errorOf(events).reason).toBe("aborted");
    expect(s.requests()).toHaveLength(0);
  });

  it("closes the request when the consumer stops reading early", async () => {
    const s = await start();
    s.script([{ type: "reply", text: "abcdefghijklmnop", chunk_size: 1, chunk_delay_ms: 30 }]);
    for await (const event of provider(s).stream(hello, { apiKey: "k" })) {
      if (event.type === "text") break;
    }
    await s.idle();
    expect(s.requests()[0]?.ended).toBe("client_closed");
  });

  it("leaves no timer running on any exit path", async () => {
    const s = await start();
    const { timers, live } = countingTimers();
    s.script([
      { type: "reply", text: "fine" },
      { type: "error", status: 503 },
      { type: "drop" },
      { type: "hang", phase: "mid_stream" },
      { type: "reply", text: "abcdefgh", chunk_size: 1, chunk_delay_ms: 20 },
    ]);
    const p = createOpenAIProvider({ name: "sim", baseURL: s.url, timeouts: { idle_ms: 100 }, timers });
    const reasons: string[] = [];
    for (let i = 0; i < 4; i++) {
      for await (const event of p.stream(hello, { apiKey: "k" })) {
        if (event.type === "done") reasons.push(event.finish_reason);
        if (event.type === "error") reasons.push(event.error.reason);
      }
      expect(live.size).toBe(0);
    }
    for await (const event of p.stream(hello, { apiKey: "k" })) if (event.type === "text") break;
    expect(live.size).toBe(0);
    expect(reasons).toEqual(["stop", "server_error", "stream_drop", "stream_drop"]);
  });
});
