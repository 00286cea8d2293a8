// The runs API over HTTP: POST /v1/runs (a turn in the background, with Idempotency-Key),
// GET /v1/runs/ID (its state), GET /v1/runs/ID/events (SSE, replayed after Last-Event-ID and then
// followed live until the run's terminal event: the reply is hijacked and the stream written to
// the raw response) and POST /v1/runs/ID/stop. The registry (runs.ts) does the work; this file
// only speaks HTTP.
import type { ServerResponse } from "node:http";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import {
  type ApprovalRecord,
  approvalDecision,
  effectiveStatus,
} from "../../agent/approvals/approval-records.js";
import { TenaxError } from "../../core/errors.js";
import { SseStream } from "../../core/sse.js";
import { type App, jsonBodyOf } from "../../http/app.js";
import { badRequest, HttpError, headerValue } from "../../http/http-error.js";
import { parseWith } from "../../http/validate.js";
import { parseChatRequest, turnRequestOf } from "../chat-request.js";
import { FINISHED, type RunEvent, type RunState } from "../run-records.js";
import { fingerprint, type RunRegistry } from "../runs.js";

export interface RunRoutesOptions {
  /** How often an idle event stream sends a `: keepalive` comment. */
  keepaliveMs?: number;
  /** What one follower may hold unsent before it is dropped (SseStream's bound by default). */
  maxBufferedBytes?: number;
  /** Where the client's system messages go (gateway.client_system), as for a chat. */
  clientSystem?: "append" | "replace";
  /** How often a follower of a run another gateway runs looks for its new events (ms). */
  pollMs?: number;
}

const MAX_KEY_LENGTH = 255;

const runParams = z.object({ id: z.string() });
const approvalParams = z.object({ id: z.string(), approval: z.string() });
const decisionBody = z.strictObject({
  decision: approvalDecision.describe("approve (once), deny, session (always in this session) or always"),
});

/** A request header's first value, trimmed; absent when blank. */
const header = () =>
  z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((v) => headerValue(v));

const submitHeaders = z.object({
  "x-session-id": header(),
  "idempotency-key": header().refine((key) => key === undefined || key.length <= MAX_KEY_LENGTH, {
    error: (issue) =>
      `the Idempotency-Key header is ${String((issue.input as string).length)} characters long; use at most ${MAX_KEY_LENGTH} (a UUID is plenty)`,
    params: { code: "invalid_idempotency_key" },
  }),
});

export function registerRunRoutes(app: App, registry: RunRegistry, options: RunRoutesOptions = {}): void {
  app.post("/v1/runs", { config: { jsonBody: true } }, async (request, reply) => {
    const { status, body, headers } = await submit(registry, request, options);
    return reply.code(status).headers(headers).send(body);
  });
  app.post("/v1/runs/:id/stop", async (request, reply) => {
    const { id: runId } = parseWith(runParams, request.params, "the path");
    const state = await known(registry, runId);
    const stopped = await registry.stop(runId, `stopped by POST /v1/runs/${runId}/stop`);
    const now = (await registry.get(runId)) ?? state;
    return reply
      .code(stopped ? 202 : 200)
      .headers(headersOf(now))
      .send({ ...view(now), stop_requested: stopped });
  });
  app.get("/v1/runs/:id/approvals", async (request, reply) => {
    const state = await known(registry, parseWith(runParams, request.params, "the path").id);
    return reply
      .headers(headersOf(state))
      .send({ object: "list", data: (await registry.approvalsOf(state)).map(approvalView) });
  });
  app.post("/v1/runs/:id/approvals/:approval", { config: { jsonBody: true } }, async (request, reply) => {
    const { id, approval } = parseWith(approvalParams, request.params, "the path");
    const state = await known(registry, id);
    const { decision } = parseWith(decisionBody, jsonBodyOf(request), "the request body");
    try {
      const decided = await registry.decideApproval(state, approval, decision);
      return reply.headers(headersOf(state)).send(approvalView(decided));
    } catch (error) {
      if (!TenaxError.isInstance(error)) throw error;
      if (error.code === "not_found")
        throw new HttpError(404, "not_found_error", "approval_not_found", `${error.message}; ${error.hint}`);
      if (error.code === "no_pattern") throw badRequest("invalid_decision", error.message);
      if (error.code === "already_decided")
        throw new HttpError(
          409,
          "conflict_error",
          "approval_decided",
          error.message,
          {},
          {
            error: { approval: error.data.approval },
          },
        );
      throw error;
    }
  });
  app.get("/v1/runs/:id", async (request, reply) => {
    const state = await known(registry, parseWith(runParams, request.params, "the path").id);
    return reply.headers(headersOf(state)).send(view(state));
  });
  app.get("/v1/runs/:id/events", async (request, reply) => {
    const state = await known(registry, parseWith(runParams, request.params, "the path").id);
    const after = lastEventId(request);
    reply.hijack();
    follow(registry, state, after, reply.raw, options);
  });
}

async function submit(
  registry: RunRegistry,
  http: FastifyRequest,
  options: RunRoutesOptions,
): Promise<{ status: number; body: unknown; headers: Record<string, string> }> {
  const { "x-session-id": sessionId, "idempotency-key": key } = parseWith(
    submitHeaders,
    http.headers,
    "the request headers",
  );
  const body = jsonBodyOf(http);
  const request = parseChatRequest(body);
  if (request.stream)
    throw badRequest(
      "invalid_field",
      "stream: true is not supported by POST /v1/runs: the run goes on in the background; follow its events with GET /v1/runs/ID/events (or use POST /v1/chat/completions to stream one reply)",
    );
  const lastUser = request.messages.findLastIndex((m) => m.role === "user");
  if (lastUser < 0) throw badRequest("invalid_field", "messages must contain a user message");
  const { state, created } = await registry.submit({
    ...(sessionId !== undefined ? { sessionId } : { earlier: request.messages.slice(0, lastUser) }),
    text: request.messages[lastUser]?.content ?? "",
    request: turnRequestOf(request, options.clientSystem),
    ...(key !== undefined ? { idempotencyKey: key } : {}),
    fingerprint: fingerprint(sessionId, body),
  });
  return {
    status: created ? 202 : 200,
    body: view(state),
    headers: { ...headersOf(state), location: `/v1/runs/${encodeURIComponent(state.run_id)}` },
  };
}

/**
 * SSE: the stored events after `after`, at the client's pace, then the live ones, until the
 * terminal event. A follower that stops reading is dropped past the bound; it resumes with
 * Last-Event-ID.
 */
function follow(
  registry: RunRegistry,
  state: RunState,
  after: number,
  res: ServerResponse,
  options: RunRoutesOptions,
): void {
  const stream = new SseStream(res, {
    kind: "run_events",
    ...(options.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: options.maxBufferedBytes }),
  });
  stream.open(headersOf(state));
  let sent = after;
  let done = false;
  let live = false;
  const write = (event: RunEvent) => {
    if (done || event.id <= sent) return;
    sent = event.id;
    stream.event(JSON.stringify(event.data), { id: event.id, event: event.type });
    if (event.type === FINISHED) end();
  };
  const log = registry.following(state.run_id);
  // Events are committed before followers hear of them, so the store holds what a live follower
  // is sent, except a batch whose write failed (it is still published). So what is published
  // while the stored backlog is sent is kept here, and sent in order once the backlog is done.
  const early: RunEvent[] = [];
  const unsubscribe = log?.subscribe((event) => {
    if (live) write(event);
    else early.push(event);
  });
  const keepalive = setInterval(() => {
    if (!done) stream.comment("keepalive");
  }, options.keepaliveMs ?? 15_000);
  const end = () => {
    if (done) return;
    done = true;
    clearInterval(keepalive);
    unsubscribe?.();
    stream.end();
  };
  // A client that hangs up only stops its own stream; the run goes on.
  res.on("close", end);
  void (async () => {
    for (;;) {
      const pending = await registry.events(state, sent);
      if (pending.length === 0) {
        // What was published but not stored (its batch's write failed) is a backlog too, sent at
        // the client's pace like the stored one: it may be many events, if the store stopped
        // taking writes while the run went on. More that comes meanwhile joins it.
        while (early.length > 0) {
          write(early.shift() as RunEvent);
          if (done) return;
          if (!(await stream.drained())) return end();
        }
        if (done) return;
        if (log && !log.done) {
          live = true;
          return;
        }
        // Not running here: ended (what is stored is all there will be), or running on another
        // gateway of a shared store, whose events come through the store: looked for again soon.
        const stored = await registry.get(state.run_id);
        const ended = stored === null || (stored.status !== "running" && stored.status !== "queued");
        if (ended && sent >= (stored?.last_event_id ?? 0)) return end();
        // Woken as the gateway running it commits events; the poll is the fallback.
        if (!ended) await registry.waitForEvents(state.run_id, options.pollMs ?? 1_000);
      }
      for (const event of pending) {
        write(event);
        if (done) return;
        if (!(await stream.drained())) return end();
      }
    }
    // A store that cannot be read any more ends the stream; the client resumes with Last-Event-ID.
  })().catch(end);
}

function lastEventId(request: FastifyRequest): number {
  const query = request.query as { last_event_id?: unknown };
  const fromQuery = typeof query.last_event_id === "string" ? query.last_event_id : undefined;
  const raw = headerValue(request.headers["last-event-id"]) ?? fromQuery ?? "0";
  const id = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(id))
    throw badRequest(
      "invalid_last_event_id",
      `Last-Event-ID (or ?last_event_id=) must be a whole number of 0 or more, the id of the last event received; got ${JSON.stringify(raw)}`,
    );
  return id;
}

async function known(registry: RunRegistry, runId: string): Promise<RunState> {
  const state = await registry.get(runId);
  if (state) return state;
  throw new HttpError(
    404,
    "not_found_error",
    "run_not_found",
    `no run ${runId}: it never existed here, or it ended more than gateway.run_retention_hours ago and was pruned; start one with POST /v1/runs`,
  );
}

function approvalView(record: ApprovalRecord) {
  return { object: "approval", ...record, status: effectiveStatus(record, Date.now()) };
}

/** The state a client sees (the Idempotency-Key stays internal). */
function view(state: RunState) {
  const { idempotency_key: _key, ...shown } = state;
  return { object: "run", ...shown };
}

function headersOf(state: RunState): Record<string, string> {
  return state.session_id === "" ? {} : { "x-session-id": state.session_id };
}
