// The simulator provider: an OpenAI-compatible Chat Completions server on node:http that answers
// deterministically, fails on cue (one scripted step per request) and records what it received.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { realSleep, systemClock } from "../../core/deps.js";
import { answerClientError } from "../../http/node-http.js";
import {
  contextOverflow,
  lowerKeys,
  modelNotFound,
  modelObject,
  parseJson,
  readBody,
  sendJson,
  waitUntilClosed,
} from "./respond.js";
import { parseScript, type SimStep, SimulatorScriptError } from "./steps.js";
import { DEFAULT_SIM_MODELS, type SimRequestRecord, type Simulator, type SimulatorOptions } from "./types.js";
import {
  type ChatRequest,
  type CompletionMeta,
  chatRequestSchema,
  completionObject,
  defaultReplyText,
  errorBody,
  errorTypeForStatus,
  logprobsFor,
  pieces,
  promptTokens,
  streamChunks,
  toWireToolCalls,
  type Usage,
  usageFor,
  type WireToolCall,
} from "./wire.js";

export type { SimModel, SimRequestEnd, SimRequestRecord, Simulator, SimulatorOptions } from "./types.js";
export { DEFAULT_SIM_MODELS } from "./types.js";

const DEFAULT_CHUNK_SIZE = 8;
const DEFAULT_MALFORMED_JSON = '{"id":"chatcmpl-sim","object":"chat.completion","choices":[{"index":0,"mess';
const DEFAULT_MALFORMED_CHUNK = '{"id":"chatcmpl-sim","object":"chat.completion.chunk","choices":[{';

interface Answer {
  text: string;
  toolCalls: WireToolCall[];
  finishReason: string;
  usage: Usage;
}

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  record: SimRequestRecord;
  /** Aborted when the response closes, for whatever reason. */
  closed: AbortSignal;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? "127.0.0.1";
  const models = options.models ?? DEFAULT_SIM_MODELS;
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? realSleep;
  let queue: SimStep[] = [];
  let records: SimRequestRecord[] = [];
  const open = new Set<Exchange>();
  let idleWaiters: (() => void)[] = [];

  const settle = (exchange: Exchange) => {
    open.delete(exchange);
    if (open.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        sendJson(res, 500, errorBody(`simulator failure: ${String(error)}`, "server_error"));
      } else {
        res.destroy();
      }
    });
  }).on("clientError", answerClientError);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://simulator").pathname;
    if (path.startsWith("/__sim/")) return control(req, res, path);

    const record: SimRequestRecord = {
      seq: records.length + 1,
      method: req.method ?? "GET",
      path,
      headers: { ...req.headers },
      body: null,
      received_at: clock.now(),
      step: null,
      status: null,
      ended: "open",
      ended_at: null,
      remote_port: req.socket.remotePort ?? null,
    };
    records.push(record);
    const controller = new AbortController();
    const exchange: Exchange = { req, res, record, closed: controller.signal };
    open.add(exchange);
    res.once("close", () => {
      if (record.ended === "open") record.ended = res.writableFinished ? "completed" : "client_closed";
      record.ended_at = clock.now();
      record.status = res.headersSent ? res.statusCode : null;
      controller.abort();
      settle(exchange);
    });

    const raw = await readBody(req);
    record.body = parseJson(raw);

    if (req.method === "GET" && path === "/v1/models") {
      const data = Object.keys(models).map((id) => modelObject(id));
      return sendJson(res, 200, { object: "list", data });
    }
    const modelMatch = /^\/v1\/models\/(.+)$/.exec(path);
    if (req.method === "GET" && modelMatch) {
      const id = decodeURIComponent(modelMatch[1] ?? "");
      if (models[id]) return sendJson(res, 200, modelObject(id));
      return sendJson(res, 404, modelNotFound(id));
    }
    if (req.method === "POST" && path === "/v1/chat/completions") return chat(exchange, raw);
    return sendJson(
      res,
      404,
      errorBody(`the simulator has no route ${req.method} ${path}`, "invalid_request_error", "unknown_url"),
    );
  }

  async function chat(exchange: Exchange, raw: string): Promise<void> {
    const { res, record } = exchange;
    if (record.body === null) {
      return sendJson(
        res,
        400,
        errorBody(
          raw.length === 0 ? "the request has no body" : "the request body is not valid JSON",
          "invalid_request_error",
        ),
      );
    }
    const parsed = chatRequestSchema.safeParse(record.body);
    if (!parsed.success) {
      const detail = parsed.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ");
      return sendJson(res, 400, errorBody(`invalid chat request: ${detail}`, "invalid_request_error"));
    }
    const request = parsed.data;
    const model = models[request.model];
    if (!model) return sendJson(res, 404, modelNotFound(request.model));

    // A request too long for the window is refused before it takes a scripted step, as a real
    // provider would refuse it before any other behaviour applied.
    const prompt = promptTokens(request);
    const reserve = request.max_completion_tokens ?? request.max_tokens ?? 0;
    if (prompt + reserve > model.context_window) {
      return sendJson(res, 400, contextOverflow(model.context_window, prompt, reserve));
    }

    const step = queue.shift();
    record.step = step?.type ?? "default";
    const meta: CompletionMeta = {
      id: `chatcmpl-sim-${record.seq}`,
      created: Math.floor(clock.now() / 1000),
      model: request.model,
    };
    if (!step) return answer(exchange, request, meta, replyAnswer(defaultReplyText(request), "stop", prompt));

    switch (step.type) {
      case "reply":
        return answer(exchange, request, meta, replyAnswer(step.text, step.finish_reason ?? "stop", prompt), {
          chunkSize: step.chunk_size,
          delayMs: step.chunk_delay_ms,
        });
      case "tool_calls": {
        const toolCalls = toWireToolCalls(step.calls, `sim${record.seq}`);
        const text = step.text ?? "";
        const chars =
          text.length +
          toolCalls.reduce((n, c) => n + c.function.name.length + c.function.arguments.length, 0);
        return answer(
          exchange,
          request,
          meta,
          { text, toolCalls, finishReason: "tool_calls", usage: usageFor(prompt, chars) },
          { chunkSize: step.chunk_size, delayMs: step.chunk_delay_ms },
        );
      }
      case "error": {
        const isText = step.text !== undefined;
        const payload = isText
          ? (step.text ?? "")
          : JSON.stringify(
              step.body ?? errorBody(`simulated error ${step.status}`, errorTypeForStatus(step.status)),
            );
        const headers: Record<string, string> = {
          "content-type": isText ? "text/plain; charset=utf-8" : "application/json",
          ...lowerKeys(step.headers ?? {}),
        };
        res.writeHead(step.status, headers);
        res.end(payload);
        return;
      }
      case "hang":
        if (step.phase === "before_headers") return waitUntilClosed(exchange.closed);
        return interrupt(exchange, request, meta, prompt, step.after_chunks ?? 1, "hang");
      case "drop":
        return interrupt(exchange, request, meta, prompt, step.after_chunks ?? 1, "drop");
      case "malformed":
        if (!request.stream) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(step.raw ?? DEFAULT_MALFORMED_JSON);
          return;
        }
        return interrupt(exchange, request, meta, prompt, step.after_chunks ?? 1, "malformed", step.raw);
      default: {
        const unreachable: never = step;
        throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
      }
    }
  }

  async function answer(
    exchange: Exchange,
    request: ChatRequest,
    meta: CompletionMeta,
    result: Answer,
    pacing: { chunkSize?: number | undefined; delayMs?: number | undefined } = {},
  ): Promise<void> {
    const { res } = exchange;
    if (!request.stream) {
      const message = {
        content: result.text.length > 0 || result.toolCalls.length === 0 ? result.text : null,
        ...(result.toolCalls.length > 0 ? { tool_calls: result.toolCalls } : {}),
      };
      const logprobs =
        request.logprobs === true && result.text !== ""
          ? logprobsFor(pieces(result.text, pacing.chunkSize ?? DEFAULT_CHUNK_SIZE))
          : null;
      return sendJson(
        res,
        200,
        completionObject(meta, message, result.finishReason, result.usage, logprobs),
        {
          "x-request-id": `req_sim_${exchange.record.seq}`,
        },
      );
    }
    const chunks = streamChunks(meta, result, {
      chunkSize: pacing.chunkSize ?? DEFAULT_CHUNK_SIZE,
      includeUsage: request.stream_options?.include_usage === true,
      logprobs: request.logprobs === true,
    });
    startSse(exchange);
    for (const [i, chunk] of chunks.entries()) {
      if (i > 0 && pacing.delayMs) {
        const slept = await sleep(pacing.delayMs, exchange.closed).then(
          () => true,
          () => false,
        );
        if (!slept) return;
      }
      if (exchange.closed.aborted) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    res.end("data: [DONE]\n\n");
  }

  /** Start an answer, then hang, drop the socket, or send a broken chunk. */
  async function interrupt(
    exchange: Exchange,
    request: ChatRequest,
    meta: CompletionMeta,
    prompt: number,
    afterChunks: number,
    how: "hang" | "drop" | "malformed",
    raw?: string,
  ): Promise<void> {
    const { res, record } = exchange;
    const result = replyAnswer(defaultReplyText(request), "stop", prompt);
    if (request.stream) {
      const chunks = streamChunks(meta, result, {
        chunkSize: DEFAULT_CHUNK_SIZE,
        includeUsage: request.stream_options?.include_usage === true,
      });
      startSse(exchange);
      for (const chunk of chunks.slice(0, afterChunks)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (how === "malformed") {
        res.end(`data: ${raw ?? DEFAULT_MALFORMED_CHUNK}\n\n`);
        return;
      }
    } else {
      // Without a stream there are no chunks: send the headers and the first half of the body.
      const body = JSON.stringify(completionObject(meta, { content: result.text }, "stop", result.usage));
      res.writeHead(200, { "content-type": "application/json" });
      res.write(body.slice(0, Math.floor(body.length / 2)));
    }
    if (how === "hang") return waitUntilClosed(exchange.closed);
    record.ended = "dropped";
    // Flush what was written, then cut the connection without ending the response.
    await new Promise<void>((resolve) => res.write("", () => resolve()));
    res.destroy();
  }

  function startSse(exchange: Exchange): void {
    exchange.res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-request-id": `req_sim_${exchange.record.seq}`,
    });
    exchange.res.flushHeaders();
  }

  async function control(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const raw = await readBody(req);
    if (path === "/__sim/script" && req.method === "POST") {
      const body = parseJson(raw);
      if (body === null) {
        return sendJson(
          res,
          400,
          errorBody(
            "the script must be a JSON array of steps",
            "invalid_request_error",
            "simulator_script_invalid",
          ),
        );
      }
      try {
        sim.script(parseScript(body));
      } catch (error) {
        if (!SimulatorScriptError.isInstance(error)) throw error;
        return sendJson(res, 400, errorBody(error.message, "invalid_request_error", error.code));
      }
      return sendJson(res, 200, { queued: queue.length });
    }
    if (path === "/__sim/requests" && req.method === "GET")
      return sendJson(res, 200, { requests: sim.requests() });
    if (path === "/__sim/reset" && req.method === "POST") {
      sim.reset();
      return sendJson(res, 200, { ok: true });
    }
    return sendJson(res, 404, errorBody(`no control route ${req.method} ${path}`, "invalid_request_error"));
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host;

  const sim: Simulator = {
    url: `http://${urlHost}:${port}/v1`,
    port,
    script(steps) {
      queue.push(...parseScript(steps));
    },
    queued: () => queue.length,
    requests: () => structuredClone(records),
    reset() {
      queue = [];
      records = [];
    },
    idle() {
      if (open.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      for (const exchange of open) {
        if (exchange.record.ended === "open") exchange.record.ended = "server_closed";
        exchange.res.destroy();
      }
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  return sim;
}

function replyAnswer(text: string, finishReason: string, prompt: number): Answer {
  return { text, toolCalls: [], finishReason, usage: usageFor(prompt, text.length) };
}
