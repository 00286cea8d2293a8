// POST /v1/responses: a Responses API request as one call of Tenax's own chat route, and its answer
// as a Response (JSON) or as the Responses stream events. A chain is a session: `model: "tenax"`
// continues the previous response's session (X-Session-Id, only the new input sent); any other
// model gets the chain's stored items replayed as its messages. The response is stored before the
// client hears it is complete, so a follow-up naming it always finds it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SseStream } from "../../core/sse.js";
import { jsonBodyOf } from "../../http/app.js";
import { badRequest, HttpError, headerValue } from "../../http/http-error.js";
import type { ResponsePutOp } from "../../store/ops.js";
import type { ResponseView } from "../../store/response-rows.js";
import { asHttpError } from "../gateway-errors.js";
import { type ResponseStore, replayChain, resolveItemReferences, storedResponse } from "./chain.js";
import { type ChatCompletion, chatChunkSchema, chatCompletionSchema } from "./chat-answer.js";
import { chatBody, inputItems, itemsToMessages } from "./chat-body.js";
import { type ChatCallAnswer, callChat, type InnerCalls, readAll } from "./chat-call.js";
import { type InputItem, parseResponsesRequest, type ResponsesRequest } from "./request.js";
import { completionToResponse, type ResponseMeta, type ResponseObject } from "./response-object.js";
import { readSse } from "./sse-reader.js";
import { ResponseStreamEncoder } from "./stream-encoder.js";

/** The model id of an agent turn; every other id is a model call. */
export const AGENT_MODEL = "tenax";

export interface ResponsesDeps {
  store: ResponseStore & {
    putResponse(row: Omit<ResponsePutOp, "op">): Promise<void>;
    deleteResponse(id: string): Promise<boolean>;
  };
  now?: () => number;
  /** A new id with the prefix (`resp_`, `msg_`, `fc_`, `call_`). */
  newId: (prefix: string) => string;
  /** What one streaming client may hold unsent before it is dropped. */
  streamBufferBytes?: number;
}

/** Headers of the chat route's error answers that the client must still get. */
const PASSED_HEADERS = ["x-session-id", "retry-after", "www-authenticate", "allow"];

interface Plan {
  request: ResponsesRequest;
  items: InputItem[];
  body: Record<string, unknown>;
  /** The session to continue (X-Session-Id), or null for a new one. */
  sessionId: string | null;
}

/** What the request becomes: the chat body, and the session it continues. */
async function plan(raw: unknown, store: ResponseStore, callerSession: string | undefined): Promise<Plan> {
  const request = parseResponsesRequest(await resolveItemReferences(raw, store));
  const items = inputItems(request.input);
  const messages = itemsToMessages(items);
  const stream = request.stream === true;
  const previous = request.previous_response_id
    ? await storedResponse(store, request.previous_response_id)
    : null;
  if (previous === null)
    return {
      request,
      items,
      sessionId: callerSession ?? null,
      body: chatBody({ request, history: [], messages, stream }),
    };
  // The agent's session holds the chain, unless the chain forked off it since (a later response).
  if (request.model === AGENT_MODEL && (await continuesSession(store, previous))) {
    const only = messages[0];
    if (messages.length !== 1 || only?.role !== "user")
      throw badRequest(
        "invalid_field",
        `input: with previous_response_id and model ${AGENT_MODEL}, send one user message (the session of ${previous.id} holds the rest)`,
      );
    return {
      request,
      items,
      sessionId: previous.session_id,
      body: chatBody({ request, history: [], messages, stream }),
    };
  }
  const history = itemsToMessages(await replayChain(store, previous));
  return { request, items, sessionId: null, body: chatBody({ request, history, messages, stream }) };
}

async function continuesSession(store: ResponseStore, previous: ResponseView): Promise<boolean> {
  return previous.session_id !== null && (await store.latestResponseId(previous.session_id)) === previous.id;
}

export async function createResponse(
  app: FastifyInstance,
  calls: InnerCalls,
  deps: ResponsesDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const now = deps.now ?? Date.now;
  const p = await plan(jsonBodyOf(request), deps.store, headerValue(request.headers["x-session-id"]));
  const meta: ResponseMeta = {
    id: deps.newId("resp_"),
    createdAt: Math.floor(now() / 1000),
    request: p.request,
  };
  const call = callChat(app, calls, request.headers, p.body, p.sessionId);
  // The caller's hang-up ends the chat call (an agent turn ends interrupted, and is kept).
  const onClose = () => {
    if (!reply.raw.writableFinished) call.abort();
  };
  reply.raw.on("close", onClose);
  try {
    const answer = await call.answer;
    const sessionId = answer.headers["x-session-id"] ?? null;
    if (answer.status < 200 || answer.status > 299) return await passError(reply, answer);
    const save = (response: ResponseObject) => saveResponse(deps, now, p, sessionId, response);
    if (answer.eventStream) return await streamAnswer(deps, reply, answer, meta, save, sessionId);
    const completion = parseCompletion(await readAll(answer.body));
    const response = completionToResponse(meta, completion, deps.newId);
    await save(response);
    reply
      .code(200)
      .headers(sessionId ? { "x-session-id": sessionId } : {})
      .send(response);
  } finally {
    reply.raw.off("close", onClose);
  }
}

/** A refused or failed chat call: the same status, headers and OpenAI error body. */
async function passError(reply: FastifyReply, answer: ChatCallAnswer): Promise<void> {
  const text = await readAll(answer.body);
  const headers: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = {
      error: {
        message: `the chat route answered ${answer.status} with a body that is not JSON: ${text.slice(0, 200)}`,
        type: "server_error",
        code: "bad_chat_answer",
      },
    };
  }
  reply.code(answer.status).headers(headers).send(body);
}

function parseCompletion(text: string): ChatCompletion {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badChatAnswer(`a body that is not JSON: ${text.slice(0, 200)}`);
  }
  const parsed = chatCompletionSchema.safeParse(json);
  if (!parsed.success)
    throw badChatAnswer(`a chat.completion without ${parsed.error.issues[0]?.path.join(".")}`);
  return parsed.data;
}

function badChatAnswer(what: string): HttpError {
  return new HttpError(502, "server_error", "bad_chat_answer", `the chat route answered ${what}`);
}

/** Keep the response (unless store: false) with the items it was asked and answered. */
async function saveResponse(
  deps: ResponsesDeps,
  now: () => number,
  p: Plan,
  sessionId: string | null,
  response: ResponseObject,
): Promise<void> {
  if (p.request.store === false) return;
  const { output, output_text: _text, ...rest } = response;
  await deps.store.putResponse({
    id: response.id,
    session_id: sessionId,
    model: p.request.model,
    status: response.status,
    previous_response_id: response.previous_response_id,
    input: JSON.stringify(p.items),
    output: JSON.stringify(output),
    response: JSON.stringify(rest),
    created_at: now(),
  });
}

/** The chat stream as Responses events, ended by `response.completed` or `response.failed`. */
async function streamAnswer(
  deps: ResponsesDeps,
  reply: FastifyReply,
  answer: ChatCallAnswer,
  meta: ResponseMeta,
  save: (response: ResponseObject) => Promise<void>,
  sessionId: string | null,
): Promise<void> {
  reply.hijack();
  const sse = new SseStream(reply.raw, {
    kind: "responses",
    ...(deps.streamBufferBytes === undefined ? {} : { maxBufferedBytes: deps.streamBufferBytes }),
  });
  sse.open(sessionId ? { "x-session-id": sessionId } : {});
  const encoder = new ResponseStreamEncoder(meta, deps.newId, (event) => {
    sse.event(JSON.stringify(event), { event: event.type });
  });
  encoder.start();
  let failure: { code: string; message: string; type: string } | null = null;
  let done = false;
  try {
    for await (const event of readSse(answer.body)) {
      if (event.data === "[DONE]") {
        done = true;
        break;
      }
      const json = parseJson(event.data);
      const error = (json as { error?: { code?: unknown; message?: unknown; type?: unknown } } | null)?.error;
      if (error) {
        failure = {
          code: String(error.code ?? "turn_failed"),
          message: String(error.message ?? "the chat call failed"),
          type: String(error.type ?? "server_error"),
        };
        break;
      }
      const chunk = chatChunkSchema.safeParse(json);
      if (!chunk.success) {
        failure = {
          code: "bad_chat_answer",
          message: `the chat stream sent an event that is not a chunk: ${event.data.slice(0, 200)}`,
          type: "server_error",
        };
        break;
      }
      encoder.chunk(chunk.data);
    }
  } catch (error) {
    failure = {
      code: "chat_stream_failed",
      message: `the chat stream failed: ${(error as Error).message}`,
      type: "server_error",
    };
  }
  if (done) {
    const response = encoder.end();
    try {
      await save(response);
      encoder.completed(response);
      return sse.end();
    } catch (error) {
      const e = asHttpError(error);
      failure = { code: e.code, message: e.message, type: e.type };
    }
  }
  // A caller that hung up cut the chat stream itself: that, not the cut, is why it ended.
  if (sse.closed && !sse.dropped)
    failure = { code: "client_closed", message: "the client closed the connection", type: "server_error" };
  failure ??= {
    code: "stream_ended",
    message: "the chat stream ended before its last chunk",
    type: "server_error",
  };
  const failed = encoder.fail(failure);
  // Kept so that GET shows how it ended; a store that refuses this too has already said so.
  await save(failed).catch(() => {});
  sse.end();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
