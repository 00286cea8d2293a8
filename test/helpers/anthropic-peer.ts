// A small Anthropic Messages API peer for tests: POST /v1/messages on node:http, answering with JSON or with
// the real SSE event sequence, failing on cue (one scripted step per request) and recording what it received.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { realSleep, systemClock } from "../../src/core/deps.js";
import {
  lowerKeys,
  parseJson,
  readBody,
  sendJson,
  waitUntilClosed,
} from "../../src/llm/simulator/respond.js";
import type { SimRequestRecord } from "../../src/llm/simulator/types.js";

export interface PeerToolUse {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as written (to test the client's assembly). */
  input: Record<string, unknown> | string;
}

export type PeerStep =
  | { type: "reply"; text: string; stop_reason?: string; chunk_size?: number; chunk_delay_ms?: number }
  | { type: "tool_use"; text?: string; calls: PeerToolUse[]; chunk_size?: number }
  /** An error response in Anthropic's shape, or `body` sent as given. */
  | {
      type: "error";
      status: number;
      error_type?: string;
      message?: string;
      headers?: Record<string, string>;
      body?: unknown;
    }
  /** Accept the request and never send headers. */
  | { type: "hang" }
  /** Send `after_events` stream events, then cut the socket. */
  | { type: "drop"; after_events?: number }
  /** Send `after_events` stream events, then an `event: error` inside the 200 stream. */
  | { type: "stream_error"; after_events?: number; error_type: string; message?: string };

/** The simulator's record, with the peer's own step names. */
export type PeerRequestRecord = Omit<SimRequestRecord, "step"> & {
  step: PeerStep["type"] | "default" | null;
};

export interface AnthropicPeer {
  /** The base URL for the Anthropic SDK (it appends /v1/messages). */
  readonly url: string;
  script(steps: PeerStep[]): void;
  requests(): PeerRequestRecord[];
  /** Resolves once no request is being answered. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

interface Block {
  start: Record<string, unknown>;
  deltas: Record<string, unknown>[];
  /** The complete block, for a non-streamed answer. */
  whole: Record<string, unknown>;
}

interface Answer {
  blocks: Block[];
  stop_reason: string;
  output_tokens: number;
}

const DEFAULT_CHUNK_SIZE = 8;

export async function startAnthropicPeer(host = "127.0.0.1"): Promise<AnthropicPeer> {
  let queue: PeerStep[] = [];
  const records: PeerRequestRecord[] = [];
  const open = new Set<ServerResponse>();
  let idleWaiters: (() => void)[] = [];

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://peer").pathname;
    const record: PeerRequestRecord = {
      seq: records.length + 1,
      method: req.method ?? "GET",
      path,
      headers: { ...req.headers },
      body: null,
      received_at: systemClock.now(),
      step: null,
      status: null,
      ended: "open",
      ended_at: null,
      remote_port: req.socket.remotePort ?? null,
    };
    records.push(record);
    open.add(res);
    const closed = new AbortController();
    res.once("close", () => {
      if (record.ended === "open") record.ended = res.writableFinished ? "completed" : "client_closed";
      record.ended_at = systemClock.now();
      record.status = res.headersSent ? res.statusCode : null;
      closed.abort();
      open.delete(res);
      if (open.size > 0) return;
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    });
    record.body = parseJson(await readBody(req));
    const body = record.body as { model?: unknown; stream?: unknown; messages?: unknown } | null;
    if (req.method !== "POST" || path !== "/v1/messages") {
      return sendJson(res, 404, errorBody("not_found_error", `no route ${req.method} ${path}`));
    }
    if (body === null || typeof body.model !== "string" || !Array.isArray(body.messages)) {
      return sendJson(res, 400, errorBody("invalid_request_error", "model and messages are required"));
    }
    const scripted = queue.shift();
    record.step = scripted?.type ?? "default";
    const step: PeerStep = scripted ?? { type: "reply", text: "ok" };
    const meta = {
      id: `msg_peer_${record.seq}`,
      model: body.model,
      input_tokens: Math.ceil(JSON.stringify(body.messages).length / 4),
    };
    const stream = body.stream === true;

    switch (step.type) {
      case "reply":
      case "tool_use": {
        const answer = toAnswer(step, record.seq);
        if (!stream) return sendJson(res, 200, messageObject(meta, answer));
        return sendEvents(res, closed.signal, events(meta, answer), step.type === "reply" ? step : {});
      }
      case "error": {
        const payload = step.body ?? errorBody(step.error_type ?? "api_error", step.message ?? "peer error");
        return sendJson(res, step.status, payload, lowerKeys(step.headers ?? {}));
      }
      case "hang":
        return waitUntilClosed(closed.signal);
      case "drop": {
        const all = events(meta, toAnswer({ type: "reply", text: "partial answer that never ends" }, 0));
        startSse(res);
        for (const [name, data] of all.slice(0, step.after_events ?? 3)) writeEvent(res, name, data);
        record.ended = "dropped";
        await new Promise<void>((resolve) => res.write("", () => resolve()));
        res.destroy();
        return;
      }
      case "stream_error": {
        const all = events(meta, toAnswer({ type: "reply", text: "cut short" }, 0));
        startSse(res);
        for (const [name, data] of all.slice(0, step.after_events ?? 3)) writeEvent(res, name, data);
        writeEvent(res, "error", errorBody(step.error_type, step.message ?? "peer stream error"));
        res.end();
        return;
      }
      default: {
        const unreachable: never = step;
        throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
      }
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://${host}:${port}`,
    script(steps) {
      queue.push(...steps);
    },
    requests: () => structuredClone(records),
    idle() {
      if (open.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      queue = [];
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

export function errorBody(type: string, message: string) {
  return { type: "error", error: { type, message } };
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function toAnswer(step: Extract<PeerStep, { type: "reply" | "tool_use" }>, seq: number): Answer {
  const size = Math.max(1, step.chunk_size ?? DEFAULT_CHUNK_SIZE);
  const blocks: Block[] = [];
  const text = step.text ?? "";
  if (text !== "") {
    blocks.push({
      start: { type: "text", text: "" },
      deltas: pieces(text, size).map((t) => ({ type: "text_delta", text: t })),
      whole: { type: "text", text },
    });
  }
  const calls = step.type === "tool_use" ? step.calls : [];
  for (const [i, call] of calls.entries()) {
    const id = call.id ?? `toolu_peer${seq}_${i}`;
    const json = typeof call.input === "string" ? call.input : JSON.stringify(call.input);
    blocks.push({
      start: { type: "tool_use", id, name: call.name, input: {} },
      deltas: pieces(json, size).map((p) => ({ type: "input_json_delta", partial_json: p })),
      whole: { type: "tool_use", id, name: call.name, input: parseJson(json) ?? {} },
    });
  }
  const stop_reason = step.type === "tool_use" ? "tool_use" : (step.stop_reason ?? "end_turn");
  const chars = blocks.reduce((n, b) => n + JSON.stringify(b.whole).length, 0);
  return { blocks, stop_reason, output_tokens: Math.ceil(chars / 4) };
}

type Meta = { id: string; model: string; input_tokens: number };

function messageObject(meta: Meta, answer: Answer) {
  return {
    id: meta.id,
    type: "message",
    role: "assistant",
    model: meta.model,
    content: answer.blocks.map((b) => b.whole),
    stop_reason: answer.stop_reason,
    stop_sequence: null,
    usage: { input_tokens: meta.input_tokens, output_tokens: answer.output_tokens },
  };
}

/** The documented order: message_start, per block start/delta.../stop, message_delta, message_stop. */
function events(meta: Meta, answer: Answer): [string, unknown][] {
  const out: [string, unknown][] = [];
  const start = { ...messageObject(meta, answer), content: [], stop_reason: null };
  out.push([
    "message_start",
    { type: "message_start", message: { ...start, usage: { ...start.usage, output_tokens: 1 } } },
  ]);
  out.push(["ping", { type: "ping" }]);
  for (const [index, block] of answer.blocks.entries()) {
    out.push(["content_block_start", { type: "content_block_start", index, content_block: block.start }]);
    for (const delta of block.deltas) {
      out.push(["content_block_delta", { type: "content_block_delta", index, delta }]);
    }
    out.push(["content_block_stop", { type: "content_block_stop", index }]);
  }
  out.push([
    "message_delta",
    {
      type: "message_delta",
      delta: { stop_reason: answer.stop_reason, stop_sequence: null },
      usage: { output_tokens: answer.output_tokens },
    },
  ]);
  out.push(["message_stop", { type: "message_stop" }]);
  return out;
}

function startSse(res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  res.flushHeaders();
}

function writeEvent(res: ServerResponse, name: string, data: unknown): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

async function sendEvents(
  res: ServerResponse,
  closed: AbortSignal,
  all: [string, unknown][],
  pacing: { chunk_delay_ms?: number },
): Promise<void> {
  startSse(res);
  for (const [i, [name, data]] of all.entries()) {
    if (i > 0 && pacing.chunk_delay_ms && name === "content_block_delta") {
      const slept = await realSleep(pacing.chunk_delay_ms, closed).then(
        () => true,
        () => false,
      );
      if (!slept) return;
    }
    if (closed.aborted) return;
    writeEvent(res, name, data);
  }
  res.end();
}
