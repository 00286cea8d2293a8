// POST /v1/chat/completions: one whole agent turn for an OpenAI client, streamed (SSE, opened as
// soon as the session is known) or not, with X-Session-Id continuity. Admission and the turn
// itself are the gateway's (`launch`); this is the request, the answer and the client's hang-up.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TurnResult } from "../agent/turn.js";
import { TurnInterrupt } from "../agent/turn-failure.js";
import { badRequest, HttpError, headerValue } from "../http/http-error.js";
import { sendError, sendJson } from "../http/node-http.js";
import {
  type CompletionMeta,
  CompletionStream,
  completionBody,
  failed,
  turnError,
} from "./chat-completions.js";
import { parseChatRequest, turnRequestOf } from "./chat-request.js";
import type { LaunchedTurn, LaunchRequest, TurnWatcher } from "./gateway.js";
import { SHUTDOWN_MESSAGE, storeUnavailable, unavailable } from "./gateway-errors.js";

/** What the route needs of the gateway. */
export interface ChatHost {
  launch(request: LaunchRequest): Promise<LaunchedTurn>;
  stopping(): boolean;
  now(): number;
  /** The primary model as `provider/name`, the `model` of every answer. */
  model(): string;
  /** What one streaming client may hold unsent before it is dropped. */
  streamBufferBytes?: number;
  /** Where the client's system messages go (gateway.client_system). */
  clientSystem?: "append" | "replace";
}

/** One agent turn for a chat whose body was read (and its model found to be tenax). */
export async function serveChat(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  gateway: ChatHost,
  toHttpError: (error: unknown) => HttpError,
): Promise<void> {
  const requested = headerValue(req.headers["x-session-id"]);
  const echo: Record<string, string> = requested ? { "x-session-id": requested } : {};
  let stream: CompletionStream | null = null;
  let turn: LaunchedTurn | null = null;
  // A client that hangs up leaves the session's queue at once, or stops its turn once it runs (the
  // turn still ends persisted, as interrupted). One dropped for not reading did not ask for that:
  // its turn goes on and is saved.
  const hangup = new AbortController();
  const onClose = () => {
    if (res.writableFinished || (stream as CompletionStream | null)?.dropped) return;
    const why = new TurnInterrupt("client_closed", "the client closed the connection");
    hangup.abort(why);
    turn?.controller.abort(why);
  };
  res.on("close", onClose);
  try {
    if (gateway.stopping()) throw unavailable();
    const request = parseChatRequest(body);
    const lastUser = request.messages.findLastIndex((m) => m.role === "user");
    if (lastUser < 0) throw badRequest("invalid_field", "messages must contain a user message");
    const meta = (sessionId: string): CompletionMeta => ({
      id: `chatcmpl-${sessionId}-${gateway.now().toString(36)}`,
      created: Math.floor(gateway.now() / 1000),
      model: gateway.model(),
      sessionId,
    });
    // The stream opens as soon as the session is known, before the model answers.
    const watcher: TurnWatcher | undefined = request.stream
      ? {
          onEvent: (event) => {
            if (event.type === "turn_started" && stream === null) {
              stream = new CompletionStream(
                res,
                meta(event.session_id),
                request.includeUsage,
                gateway.streamBufferBytes,
              );
              stream.open();
              if (gateway.stopping()) stream.shutdown(SHUTDOWN_MESSAGE);
            }
            stream?.onEvent(event);
          },
          shutdown: (message) => stream?.shutdown(message),
        }
      : undefined;
    turn = await gateway.launch({
      ...(requested === undefined
        ? { earlier: request.messages.slice(0, lastUser) }
        : { sessionId: requested }),
      text: request.messages[lastUser]?.content ?? "",
      request: turnRequestOf(request, gateway.clientSystem),
      // A stream tells the client of the session as the turn starts; a plain answer is the
      // client's first word of it, so its question may become durable with the answer.
      ...(watcher ? { watcher } : { acknowledgedBy: "answer" as const }),
      signal: hangup.signal,
    });
    echo["x-session-id"] = turn.sessionId;
    // Gone between leaving the queue and here: the turn stops at once.
    if (hangup.signal.aborted) turn.controller.abort(hangup.signal.reason);
    let result: TurnResult;
    try {
      result = await turn.result;
    } catch (error) {
      // A new session that never got its first write does not exist: do not name it.
      if (requested === undefined && !turn.started()) delete echo["x-session-id"];
      const message = `the turn failed: ${error instanceof Error ? error.message : String(error)}`;
      const failure = storeUnavailable(error) ?? new HttpError(500, "server_error", "turn_failed", message);
      if (stream) return (stream as CompletionStream).fail(failure);
      throw failure;
    }
    if (stream) return (stream as CompletionStream).finish(result);
    // The turn and its marker are stored: the session is named either way.
    const headers = { "x-session-id": turn.sessionId };
    if (failed(result)) return sendError(res, turnError(result, headers));
    sendJson(res, 200, completionBody(meta(turn.sessionId), result), headers);
  } catch (error) {
    const failure = toHttpError(error);
    if (res.headersSent) {
      (stream as CompletionStream | null)?.fail(failure);
      return;
    }
    sendError(res, failure.withHeaders(echo));
  } finally {
    res.off("close", onClose);
  }
}
