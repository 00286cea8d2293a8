// POST /v1/chat/completions: the body read as a provider reads it (any media type, unknown fields
// kept), checked by the chat schema, the model and the context window; then the next scripted
// step, or the default echo, written on the raw response (the reply is hijacked) so that streams,
// hangs and cut connections are the step's own.
import type { App } from "../../../http/app.js";
import { parseWith } from "../../../http/validate.js";
import { type Answer, answer, interrupt, replyAnswer } from "../answer.js";
import type { SimRouteDeps } from "../app.js";
import {
  contextOverflow,
  lowerKeys,
  modelNotFound,
  parseJson,
  sendJson,
  simError,
  waitUntilClosed,
} from "../respond.js";
import { defaultAnswer, forcedTool } from "../shape.js";
import type { Exchange } from "../state.js";
import type { SimStep, SimToolCall } from "../steps.js";
import {
  type ChatRequest,
  type CompletionMeta,
  chatRequestSchema,
  errorBody,
  errorTypeForStatus,
  promptTokens,
  toWireToolCalls,
  usageFor,
} from "../wire.js";

const DEFAULT_MALFORMED_JSON = '{"id":"chatcmpl-sim","object":"chat.completion","choices":[{"index":0,"mess';

export function registerChatRoutes(app: App, deps: SimRouteDeps): void {
  app.post("/v1/chat/completions", { config: { rawBody: true } }, async (request, reply) => {
    const exchange = deps.exchangeOf(request);
    const raw = typeof request.body === "string" ? request.body : "";
    const body = parseJson(raw);
    if (body === null) {
      const message = raw.length === 0 ? "the request has no body" : "the request body is not valid JSON";
      throw simError(400, errorBody(message, "invalid_request_error"));
    }
    const chat = parseWith(chatRequestSchema, body);
    const model = deps.models[chat.model];
    if (!model) throw simError(404, modelNotFound(chat.model));
    // A request too long for the window is refused before it takes a scripted step, as a real
    // provider would refuse it before any other behaviour applied.
    const prompt = promptTokens(chat);
    const reserve = chat.max_completion_tokens ?? chat.max_tokens ?? 0;
    if (prompt + reserve > model.context_window)
      throw simError(400, contextOverflow(model.context_window, prompt, reserve));
    forcedTool(chat);

    reply.hijack();
    const step = deps.state.nextStep();
    exchange.record.step = step?.type ?? "default";
    const meta: CompletionMeta = {
      id: `chatcmpl-sim-${exchange.record.seq}`,
      created: Math.floor(deps.clock.now() / 1000),
      model: chat.model,
    };
    try {
      await respond(exchange, chat, meta, prompt, step, deps);
    } catch (error) {
      if (exchange.res.headersSent) exchange.res.destroy();
      else sendJson(exchange.res, 500, errorBody(`simulator failure: ${String(error)}`, "server_error"));
    }
  });
}

async function respond(
  exchange: Exchange,
  request: ChatRequest,
  meta: CompletionMeta,
  prompt: number,
  step: SimStep | undefined,
  deps: SimRouteDeps,
): Promise<void> {
  const { res, record } = exchange;
  const { sleep } = deps;
  if (!step)
    return answer(exchange, request, meta, defaultAnswer(request, prompt, `sim${record.seq}`), sleep);
  switch (step.type) {
    case "reply":
      return answer(
        exchange,
        request,
        meta,
        replyAnswer(step.text, step.finish_reason ?? "stop", prompt),
        sleep,
        {
          chunkSize: step.chunk_size,
          delayMs: step.chunk_delay_ms,
        },
      );
    case "tool_calls":
      return answer(exchange, request, meta, callsAnswer(step.calls, step.text, record.seq, prompt), sleep, {
        chunkSize: step.chunk_size,
        delayMs: step.chunk_delay_ms,
      });
    case "error": {
      const isText = step.text !== undefined;
      const payload = isText
        ? (step.text ?? "")
        : JSON.stringify(
            step.body ?? errorBody(`simulated error ${step.status}`, errorTypeForStatus(step.status)),
          );
      res.writeHead(step.status, {
        "content-type": isText ? "text/plain; charset=utf-8" : "application/json",
        ...lowerKeys(step.headers ?? {}),
      });
      res.end(payload);
      return;
    }
    case "hang":
      if (step.phase === "before_headers") return waitUntilClosed(exchange.closed);
      return interrupt(exchange, request, meta, prompt, step.after_chunks ?? 1, "hang");
    case "drop": {
      const said =
        step.calls !== undefined
          ? callsAnswer(step.calls, step.text, record.seq, prompt)
          : step.text !== undefined
            ? replyAnswer(step.text, "stop", prompt)
            : undefined;
      return interrupt(exchange, request, meta, prompt, step.after_chunks ?? 1, "drop", { result: said });
    }
    case "malformed":
      if (!request.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(step.raw ?? DEFAULT_MALFORMED_JSON);
        return;
      }
      return interrupt(exchange, request, meta, prompt, step.after_chunks ?? 1, "malformed", {
        raw: step.raw,
      });
    default: {
      const unreachable: never = step;
      throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
    }
  }
}

/** A reply that calls tools (after its text, if any), with ids unique to the request when unscripted. */
function callsAnswer(calls: SimToolCall[], text: string | undefined, seq: number, prompt: number): Answer {
  const toolCalls = toWireToolCalls(calls, `sim${seq}`);
  const said = text ?? "";
  const chars =
    said.length + toolCalls.reduce((n, c) => n + c.function.name.length + c.function.arguments.length, 0);
  return { text: said, toolCalls, finishReason: "tool_calls", usage: usageFor(prompt, chars) };
}
