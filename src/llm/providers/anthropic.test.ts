import { afterEach, describe, expect, it } from "vitest";
import { type AnthropicPeer, errorBody, startAnthropicPeer } from "../../../test/helpers/anthropic-peer.js";
import { collectStream, countingTimers, errorOf } from "../../../test/helpers/provider-stream.js";
import type { ChatRequest, ProviderEvent, StreamOptions } from "../provider.js";
import type { Timeouts } from "../timeouts.js";
import { createAnthropicProvider } from "./anthropic.js";

let peer: AnthropicPeer | undefined;

afterEach(async () => {
  await peer?.close();
  peer = undefined;
});

async function start(): Promise<AnthropicPeer> {
  peer = await startAnthropicPeer();
  return peer;
}

const hello: ChatRequest = { model: "claude-test", messages: [{ role: "user", content: "hello there" }] };

/** Consume a whole stream, checking the stream contract (see collectStream). */
function collect(
  p: AnthropicPeer,
  request: ChatRequest = hello,
  options: Partial<StreamOptions> = {},
  timeouts: Partial<Timeouts> = {},
  onEvent?: (event: ProviderEvent) => void,
): Promise<ProviderEvent[]> {
  const provider = createAnthropicProvider({ name: "anthropic", baseURL: p.url, timeouts });
  return collectStream(provider, request, { apiKey: "sk-ant-test-1", ...options }, onEvent);
}

describe("anthropic provider against the Messages API peer", () => {
  it("streams text deltas, usage, then done with the provider's own stop_reason", async () => {
    const p = await start();
    p.script([{ type: "reply", text: "abcdefghij", chunk_size: 4 }]);
    const events = await collect(p);
    expect(events.flatMap((e) => (e.type === "text" ? [e.delta] : []))).toEqual(["abcd", "efgh", "ij"]);
    const usage = events.find((e) => e.type === "usage");
    expect(usage).toMatchObject({ type: "usage" });
    expect(usage?.type === "usage" && usage.input_tokens > 0 && usage.output_tokens > 0).toBe(true);
    expect(events.at(-1)).toMatchObject({
      type: "done",
      finish_reason: "end_turn",
      text: "abcdefghij",
      tool_calls: [],
    });
    const [record] = p.requests();
    expect(record?.path).toBe("/v1/messages");
    // The key arrives once, in the header the official SDK uses for it.
    const sent = [record?.headers["x-api-key"], record?.headers.authorization].filter((h) => h !== undefined);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^(Bearer )?sk-ant-test-1$/);
    expect(record?.body).toMatchObject({ model: "claude-test", stream: true, max_tokens: 4096 });
  });

  it("translates system, tool calls, merged tool results, tools and the output budget", async () => {
    const p = await start();
    await collect(p, {
      model: "claude-test",
      max_output_tokens: 50,
      tools: [{ name: "now", description: "the time", parameters: { type: "object", properties: {} } }],
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "time and date?" },
        {
          role: "assistant",
          content: "checking",
          tool_calls: [
            { id: "t1", name: "now", arguments: '{"tz":"UTC"}' },
            { id: "t2", name: "today", arguments: "{}" },
          ],
        },
        { role: "tool", content: "12:00", tool_call_id: "t1" },
        { role: "tool", content: "Monday", tool_call_id: "t2" },
        { role: "user", content: "thanks" },
      ],
    });
    expect(p.requests()[0]?.body).toEqual({
      model: "claude-test",
      max_tokens: 50,
      stream: true,
      system: "be brief",
      tools: [{ name: "now", description: "the time", input_schema: { type: "object", properties: {} } }],
      messages: [
        { role: "user", content: "time and date?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "checking" },
            { type: "tool_use", id: "t1", name: "now", input: { tz: "UTC" } },
            { type: "tool_use", id: "t2", name: "today", input: {} },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "12:00" },
            { type: "tool_result", tool_use_id: "t2", content: "Monday" },
          ],
        },
        { role: "user", content: "thanks" },
      ],
    });
  });

  it("uses default_max_tokens when the request sets no budget", async () => {
    const p = await start();
    const provider = createAnthropicProvider({ name: "a", baseURL: p.url, default_max_tokens: 777 });
    for await (const _ of provider.stream(hello, { apiKey: "k" })) {
      // drain
    }
    expect(p.requests()[0]?.body).toMatchObject({ max_tokens: 777 });
  });

  it("assembles tool use from input_json_delta and emits each call once, complete", async () => {
    const p = await start();
    p.script([
      {
        type: "tool_use",
        text: "let me look",
        calls: [
          { name: "read_file", input: { path: "/tmp/a.txt" } },
          { id: "toolu_x", name: "shell", input: '{"cmd":"ls -la"}' },
        ],
        chunk_size: 3,
      },
    ]);
    const events = await collect(p);
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls.map((c) => [c.id, c.name, JSON.parse(c.arguments)])).toEqual([
      ["toolu_peer1_0", "read_file", { path: "/tmp/a.txt" }],
      ["toolu_x", "shell", { cmd: "ls -la" }],
    ]);
    const done = events.at(-1);
    expect(done).toMatchObject({ type: "done", finish_reason: "tool_use", text: "let me look" });
    expect(done?.type === "done" ? done.tool_calls.map((c) => c.arguments) : []).toEqual([
      '{"path":"/tmp/a.txt"}',
      '{"cmd":"ls -la"}',
    ]);
  });

  it("passes stop_reason max_tokens through unchanged", async () => {
    const p = await start();
    p.script([{ type: "reply", text: "cut sh", stop_reason: "max_tokens" }]);
    expect((await collect(p)).at(-1)).toMatchObject({
      type: "done",
      finish_reason: "max_tokens",
      text: "cut sh",
    });
  });

  it("classifies a 529 overloaded_error as overloaded", async () => {
    const p = await start();
    p.script([{ type: "error", status: 529, error_type: "overloaded_error", message: "Overloaded" }]);
    expect(errorOf(await collect(p))).toMatchObject({ reason: "overloaded", status: 529, retryable: true });
  });

  it("classifies a 429 with retry-after as a rate limit with the provider's delay", async () => {
    const p = await start();
    p.script([
      {
        type: "error",
        status: 429,
        error_type: "rate_limit_error",
        message: "Number of request tokens has exceeded your per-minute rate limit",
        headers: { "retry-after": "7" },
      },
    ]);
    expect(errorOf(await collect(p))).toMatchObject({
      reason: "rate_limit",
      retry_after_ms: 7000,
      status: 429,
      rotate_credential: true,
    });
  });

  it("classifies a 401 as auth", async () => {
    const p = await start();
    p.script([
      { type: "error", status: 401, error_type: "authentication_error", message: "invalid x-api-key" },
    ]);
    expect(errorOf(await collect(p))).toMatchObject({ reason: "auth", rotate_credential: true, status: 401 });
  });

  it("classifies a 400 'prompt is too long' as context_overflow with compress", async () => {
    const p = await start();
    p.script([
      {
        type: "error",
        status: 400,
        body: errorBody("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
      },
    ]);
    expect(errorOf(await collect(p))).toMatchObject({
      reason: "context_overflow",
      compress: true,
      status: 400,
    });
  });

  it("ends a hang before headers as a timeout once first_byte_ms passes, closing the connection", async () => {
    const p = await start();
    p.script([{ type: "hang" }]);
    const started = Date.now();
    const events = await collect(p, hello, {}, { first_byte_ms: 200 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(errorOf(events)).toMatchObject({ reason: "timeout", retryable: true });
    await p.idle();
    expect(p.requests()[0]?.ended).toBe("client_closed");
  });

  it("classifies a dropped stream as stream_drop", async () => {
    const p = await start();
    p.script([{ type: "drop", after_events: 4 }]);
    const events = await collect(p);
    expect(events.some((e) => e.type === "text")).toBe(true);
    expect(errorOf(events).reason).toBe("stream_drop");
  });

  it("classifies an overloaded_error event inside a 200 stream as overloaded", async () => {
    const p = await start();
    p.script([
      { type: "stream_error", after_events: 4, error_type: "overloaded_error", message: "Overloaded" },
    ]);
    const events = await collect(p);
    expect(events.some((e) => e.type === "text")).toBe(true);
    expect(errorOf(events)).toMatchObject({ reason: "overloaded", retryable: true });
  });

  it("ends as aborted when the caller aborts mid-stream, closing the connection", async () => {
    const p = await start();
    p.script([{ type: "reply", text: "abcdefghijklmnop", chunk_size: 1, chunk_delay_ms: 30 }]);
    const controller = new AbortController();
    const events = await collect(p, hello, { signal: controller.signal }, {}, (event) => {
      if (event.type === "text") controller.abort();
    });
    expect(errorOf(events)).toMatchObject({ reason: "aborted", retryable: false });
    await p.idle();
    expect(p.requests()).toHaveLength(1);
    expect(p.requests()[0]?.ended).toBe("client_closed");
  });

  it("ends as aborted without a request when the caller's signal fired already", async () => {
    const p = await start();
    const events = await collect(p, hello, { signal: AbortSignal.abort() });
    expect(events).toHaveLength(1);
    expect(errorOf(events).reason).toBe("aborted");
    expect(p.requests()).toHaveLength(0);
  });

  it("leaves no timer running on any exit path", async () => {
    const p = await start();
    const { timers, live } = countingTimers();
    p.script([
      { type: "reply", text: "fine" },
      { type: "error", status: 500, error_type: "api_error", message: "Internal server error" },
      { type: "drop" },
      { type: "reply", text: "abcdefgh", chunk_size: 1, chunk_delay_ms: 20 },
    ]);
    const provider = createAnthropicProvider({ name: "a", baseURL: p.url, timers });
    const reasons: string[] = [];
    for (let i = 0; i < 3; i++) {
      for await (const event of provider.stream(hello, { apiKey: "k" })) {
        if (event.type === "done") reasons.push(event.finish_reason);
        if (event.type === "error") reasons.push(event.error.reason);
      }
      expect(live.size).toBe(0);
    }
    for await (const event of provider.stream(hello, { apiKey: "k" })) if (event.type === "text") break;
    expect(live.size).toBe(0);
    expect(reasons).toEqual(["end_turn", "server_error", "stream_drop"]);
  });
});

describe("the Messages API peer itself", () => {
  it("answers a non-stream request with a whole message and errors in Anthropic's shape", async () => {
    const p = await start();
    p.script([
      { type: "tool_use", text: "hm", calls: [{ id: "toolu_1", name: "now", input: { tz: "UTC" } }] },
      { type: "error", status: 529, error_type: "overloaded_error", message: "Overloaded" },
    ]);
    const post = () =>
      fetch(`${p.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "k" },
        body: JSON.stringify({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
      });
    const ok = await post();
    expect(await ok.json()).toMatchObject({
      type: "message",
      role: "assistant",
      stop_reason: "tool_use",
      content: [
        { type: "text", text: "hm" },
        { type: "tool_use", id: "toolu_1", name: "now", input: { tz: "UTC" } },
      ],
    });
    const failed = await post();
    expect(failed.status).toBe(529);
    expect(await failed.json()).toEqual({
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
  });
});
