// The connect limit against a connect that really never completes: a loopback listener whose
// accept queue is full, so the kernel drops further SYNs and the handshake hangs.
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import { errors } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { collectStream, errorOf } from "../../../test/helpers/provider-stream.js";
import type { ChatRequest, Provider } from "../provider.js";
import type { Timeouts } from "../timeouts.js";
import { createAnthropicProvider } from "./anthropic.js";
import { createOpenAIProvider } from "./openai.js";
import { wireFromFetch } from "./openai-wire.js";
import type { Fetch } from "./sdk-call.js";

// Listens with a backlog of one, says its port, and blocks in the same callback: the event loop never
// runs again, so nothing is ever accepted (a pipe write is synchronous on Linux, so the port gets out).
const LISTENER = `
const server = require("node:net").createServer();
server.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
  process.stdout.write(server.address().port + "\\n");
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
});`;

interface Blackhole {
  url: string;
  close(): void;
}

let hole: Blackhole | undefined;

afterEach(() => {
  hole?.close();
  hole = undefined;
});

function connectsWithin(socket: net.Socket, ms: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function portOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the listener exited early (${code})`)));
    child.stdout?.once("data", (data: Buffer) => resolve(Number(String(data).trim())));
  });
}

/** A loopback address whose connects hang, proven by a probe connect that does not complete. */
async function startBlackhole(): Promise<Blackhole> {
  const child = spawn(process.execPath, ["-e", LISTENER], { stdio: ["ignore", "pipe", "inherit"] });
  const held: net.Socket[] = [];
  const close = () => {
    for (const socket of held) socket.destroy();
    child.kill("SIGKILL");
  };
  try {
    const port = await portOf(child);
    // Linux completes handshakes into the accept queue until it is full, then drops new SYNs.
    for (let i = 0; i < 8; i++) {
      const socket = net.connect(port, "127.0.0.1");
      socket.on("error", () => {});
      held.push(socket);
      if (!(await connectsWithin(socket, 300))) return { url: `http://127.0.0.1:${port}`, close };
    }
    throw new Error("every connect to the full listener completed: no hang to test against");
  } catch (error) {
    close();
    throw error;
  }
}

const hello: ChatRequest = { model: "echo", messages: [{ role: "user", content: "hello" }] };

type Make = (url: string, timeouts: Partial<Timeouts>, fetch?: Fetch) => Provider;

const PROVIDERS: [string, Make][] = [
  [
    "openai",
    (url, timeouts, fetch) =>
      createOpenAIProvider({
        name: "hole",
        baseURL: `${url}/v1`,
        timeouts,
        ...(fetch ? { request: wireFromFetch(fetch) } : {}),
      }),
  ],
  [
    "anthropic",
    (url, timeouts, fetch) =>
      createAnthropicProvider({ name: "hole", baseURL: url, timeouts, ...(fetch ? { fetch } : {}) }),
  ],
];

describe.each(PROVIDERS)("%s provider against a connect that never completes", (_, make) => {
  it("ends as a retryable timeout once connect_ms passes, long before first_byte_ms", async () => {
    hole = await startBlackhole();
    const provider = make(hole.url, { connect_ms: 300, first_byte_ms: 8_000 });
    const started = performance.now();
    const events = await collectStream(provider, hello, { apiKey: "k" });
    const elapsed = performance.now() - started;
    expect(events).toHaveLength(1);
    expect(errorOf(events)).toMatchObject({
      reason: "timeout",
      retryable: true,
      fallback: true,
      status: null,
    });
    expect(errorOf(events).message).toContain("could not connect within the connect limit of 300 ms");
    // The connect deadline ended it (undici's clock is coarse, about a second), not first_byte's 8 s.
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3_000);
  });

  it("ends as aborted, not a timeout, when the caller gives up while connecting", async () => {
    hole = await startBlackhole();
    const provider = make(hole.url, { connect_ms: 5_000 });
    const started = performance.now();
    const events = await collectStream(provider, hello, { apiKey: "k", signal: AbortSignal.timeout(150) });
    expect(errorOf(events)).toMatchObject({ reason: "aborted", retryable: false });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("the OpenAI wire with undici's own connect timeout", () => {
  it("classifies the ConnectTimeoutError that undici's request throws as a connect timeout", async () => {
    const cause = new errors.ConnectTimeoutError(
      "Connect Timeout Error (attempted address: a:443, timeout: 50ms)",
    );
    const provider = createOpenAIProvider({
      name: "hole",
      baseURL: "http://127.0.0.1:9/v1",
      timeouts: { connect_ms: 50 },
      request: () => Promise.reject(cause),
    });
    const events = await collectStream(provider, hello, { apiKey: "k" });
    expect(errorOf(events)).toMatchObject({ reason: "timeout", retryable: true });
    expect(errorOf(events).message).toContain("could not connect within the connect limit of 50 ms");
  });
});

describe.each(PROVIDERS)("%s provider with an injected fetch", (_, make) => {
  it("classifies fetch's connect timeout as one although the SDK drops the cause", async () => {
    // What undici's fetch throws: its real ConnectTimeoutError inside fetch's TypeError.
    const cause = new errors.ConnectTimeoutError(
      "Connect Timeout Error (attempted address: a:443, timeout: 50ms)",
    );
    const thrown = new TypeError("fetch failed", { cause });
    const provider = make("http://127.0.0.1:9", { connect_ms: 50 }, () => Promise.reject(thrown));
    const events = await collectStream(provider, hello, { apiKey: "k" });
    expect(errorOf(events)).toMatchObject({ reason: "timeout", retryable: true });
    expect(errorOf(events).message).toContain("could not connect within the connect limit of 50 ms");
  });
});
