// The model-gateway mode of POST /v1/chat/completions: `model: "PROVIDER/NAME"` is one model call
// with the client's own tools and parameters through the whole resilience core (classify, retry,
// key pool, shared ledger, concurrency limit, and the fallback chain at most once, as for turns),
// answered as a chat.completion or as SSE chunks, and stored as a session. A call that fails is an
// OpenAI-shaped error with the status its failure maps to (failure-status.ts), never an empty
// success; streamed, it is the final `data: {"error"}` event.
import { interruptFailure, type TurnFailure, TurnInterrupt, thrownFailure } from "../agent/turn-failure.js";
import { heldUntil } from "../core/held-until.js";
import { type TraceSpan, traced } from "../core/trace.js";
import { type HttpError as GatewayErrorType, HttpError } from "../http/http-error.js";
import { sendError, sendJson } from "../http/node-http.js";
import type { Completion } from "../llm/model-call.js";
import type { RouteEvent, StatusEvent } from "../llm/route-events.js";
import type { ModelRouter } from "../llm/router.js";
import type { StorePort } from "../store/port.js";
import { failureError } from "./failure-status.js";
import { asHttpError, unavailable } from "./gateway-errors.js";
import { completionObject } from "./model-call-answer.js";
import { parseModelCallBody } from "./model-call-body.js";
import type { ModelCallHandler, ModelCallRequest } from "./model-call-handler.js";
import { answerOp, requestOps } from "./model-call-session.js";
import { ModelCallStream } from "./model-call-stream.js";

export interface ModelCallDeps {
  router: ModelRouter;
  store: StorePort;
  now?: () => number;
  /** What one streaming client may hold unsent before it is dropped. */
  streamBufferBytes?: number;
  /** True while the gateway drains: new calls get 503. */
  stopping?: () => boolean;
  /** Each status event of a call (retry, key rotation, fallback), with its session: the event feed and audit trail. */
  onStatus?: (sessionId: string, event: StatusEvent) => void;
}

/**
 * The error of a call that failed, as for a turn, but for one case: a provider that refuses the
 * request as invalid refuses what the client sent (its tools, its schema, its parameters), so the
 * client gets the 400 and the provider's words, not a 502 for a request Tenax built.
 */
function callError(failure: TurnFailure, sessionId: string): HttpError {
  const tenax = { session_id: sessionId, target: failure.target };
  const headers = { "x-session-id": sessionId };
  if (failure.code !== "invalid_request") return failureError(failure, tenax, headers);
  const message = `the provider refused the request as invalid: ${failure.classified?.message ?? failure.message}`;
  return new HttpError(400, "invalid_request_error", "invalid_request", message, headers, {
    error: {
      param: null,
      layer: failure.layer,
      next: "fix the request: the provider's message says what it refused",
    },
    tenax,
  });
}

export function createModelCallHandler(deps: ModelCallDeps): ModelCallHandler {
  const now = deps.now ?? Date.now;
  let seq = 0;
  // One trace per call: the session's commits and each model call (the fallback's too) nest under it.
  return (request) =>
    traced(
      "tenax.model_call",
      {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": request.target.model,
        "tenax.provider": request.target.provider,
      },
      (span) => handle(request, span),
    );

  async function handle(
    { target, body, sessionId: requested, res, signal }: ModelCallRequest,
    span: TraceSpan,
  ) {
    const echo: Record<string, string> = requested === undefined ? {} : { "x-session-id": requested };
    let stream: ModelCallStream | null = null;
    try {
      if (deps.stopping?.()) throw unavailable();
      const call = parseModelCallBody(body);
      const { sessionId, ops } = await requestOps(deps.store, target, call.request.messages, requested);
      span.set({ "gen_ai.conversation.id": sessionId });
      // Persist, then publish: the session and the question are committed before the provider is
      // asked, and durable before the client hears of them. A stream hears of them as it opens:
      // their sync runs while the provider answers. A plain answer is the client's first word of
      // the call: the answer's one sync makes both durable (durableWithNext), and a failure's
      // answer waits for the question's sync.
      const lazy = !call.stream;
      const question = deps.store.writeStaged(ops, lazy ? { durableWithNext: true } : {});
      await question.applied;
      // A client that hangs up (or is dropped for not reading) ends its call: no one would get it.
      // So does a question that cannot be made durable: its call's answer could never be stored.
      const controller = new AbortController();
      question.durable.catch((error: unknown) => controller.abort(error));
      const at = now();
      const meta = {
        id: `chatcmpl-${sessionId}-${at.toString(36)}-${(seq++).toString(36)}`,
        created: Math.floor(at / 1000),
        sessionId,
      };
      const open = call.stream
        ? new ModelCallStream(
            res,
            meta,
            `${target.provider}/${target.model}`,
            call.includeUsage,
            deps.streamBufferBytes,
          )
        : null;
      const told = question.durable.then(() => {
        echo["x-session-id"] = sessionId;
        if (open) {
          open.open();
          stream = open;
        }
      });
      told.catch(() => {});
      const onClose = () => {
        if (!res.writableFinished)
          controller.abort(new TurnInterrupt("client_closed", "the client closed the connection"));
      };
      res.on("close", onClose);
      const onInterrupt = () => controller.abort(signal?.reason);
      if (signal?.aborted) onInterrupt();
      else signal?.addEventListener("abort", onInterrupt, { once: true });
      const route = deps.router.turn(target);
      const streamed = open ? heldUntil(told, (event: RouteEvent) => open.onEvent(event)) : null;
      const status = deps.onStatus;
      const onEvent = status
        ? (event: RouteEvent) => {
            if ("layer" in event) status(sessionId, event);
            streamed?.(event);
          }
        : streamed;
      let completion: Completion;
      try {
        completion = await route.complete(call.request, {
          signal: controller.signal,
          ...(onEvent ? { onEvent } : {}),
          // What the client was streamed it keeps: a restarted stream may only go on from it.
          ...(open ? { appendOnly: true } : {}),
        });
      } catch (error) {
        // A question never made durable was never stored: the store's error is the call's.
        await told;
        if (lazy) await deps.store.durableSoFar();
        const failure = controller.signal.aborted
          ? interruptFailure(controller.signal.reason)
          : thrownFailure(error);
        throw callError(failure, sessionId);
      } finally {
        res.off("close", onClose);
        signal?.removeEventListener("abort", onInterrupt);
      }
      // The answer's commit comes after the question's: acknowledged once both are durable.
      await Promise.all([told, deps.store.write([answerOp(deps.store, sessionId, completion)])]);
      if (open) return open.finish(completion, route.fallenBack);
      sendJson(res, 200, completionObject(meta, completion, route.fallenBack), { "x-session-id": sessionId });
    } catch (error) {
      const failure: GatewayErrorType = asHttpError(error);
      span.set({ "http.response.status_code": failure.status });
      span.fail(failure.code);
      if (stream) return (stream as ModelCallStream).fail(failure);
      if (res.headersSent) {
        res.end();
        return;
      }
      sendError(
        res,
        new HttpError(
          failure.status,
          failure.type,
          failure.code,
          failure.message,
          { ...echo, ...failure.headers },
          failure.details,
        ),
      );
    }
  }
}
