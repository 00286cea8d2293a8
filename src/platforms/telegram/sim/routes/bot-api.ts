// POST or GET /bot<TOKEN>/<method>: the Bot API as Telegram serves it. A wrong token is a 401
// "Unauthorized", a method the simulator does not answer a 404 "Not Found"; every call to the token's
// path is recorded with its parameters and answer. A queued fault (or the outage) answers first:
// an error status, a 429 with parameters.retry_after, a hang until released, or a cut connection;
// a released hang goes on to the method's own answer.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { App } from "../../../../http/app.js";
import { toHttpError } from "../../../../http/app.js";
import { botError, botErrorBody, describedError } from "../errors.js";
import type { Exchange } from "../exchanges.js";
import type { Fault, Outage } from "../faults.js";
import { findMethod } from "../methods/index.js";
import { readParams } from "../params.js";
import type { SimDeps } from "./deps.js";

const PATH = /^\/bot([^/]+)\/([^/]*)$/;

export function registerBotApiRoutes(app: App, deps: SimDeps): void {
  app.route({
    method: ["GET", "POST"],
    url: "/*",
    config: { rawBody: true },
    handler: (request, reply) => answerCall(request, reply, deps),
  });
}

async function answerCall(request: FastifyRequest, reply: FastifyReply, deps: SimDeps): Promise<unknown> {
  const url = new URL(request.url, "http://telegram-sim");
  const match = PATH.exec(url.pathname);
  if (!match) throw botError(404);
  const [, token = "", name = ""] = match;
  if (decodeURIComponent(token) !== deps.token) throw botError(401);
  const found = findMethod(name);
  const raw = typeof request.body === "string" ? request.body : "";
  const exchange = open(deps, request, reply, found?.name ?? name);
  const { record } = exchange;
  try {
    if (!found) throw botError(404);
    const params = readParams(url.searchParams, request.headers["content-type"], raw);
    record.params = params;
    const fault = deps.state.faults.take(found.name);
    if (fault) {
      record.fault = "mode" in fault ? "outage" : fault.type;
      const handled = await applyFault(fault, exchange, reply, deps);
      if (handled) return reply;
    }
    const result = await found.method({
      state: deps.state,
      polls: deps.polls,
      pusher: deps.pusher,
      params,
      closed: exchange.closed,
    });
    const answer = { ok: true, result };
    record.answer = answer;
    record.status = 200;
    return answer;
  } catch (error) {
    const failure = toHttpError(error, request);
    record.answer = botErrorBody(failure);
    record.status = failure.status;
    throw failure;
  }
}

/** true when the fault answered the call (or cut it); false when the call goes on as usual. */
async function applyFault(
  fault: Fault | Outage,
  exchange: Exchange,
  reply: FastifyReply,
  deps: SimDeps,
): Promise<boolean> {
  const type = "mode" in fault ? fault.mode : fault.type;
  switch (type) {
    case "error": {
      const status = "status" in fault ? fault.status : 502;
      const raw = "raw" in fault ? fault.raw : undefined;
      if (raw !== undefined) {
        exchange.record.status = status;
        exchange.record.answer = raw;
        await reply.code(status).header("content-type", "text/html").send(raw);
        return true;
      }
      const description = "description" in fault ? fault.description : undefined;
      throw description === undefined ? botError(status) : describedError(status, description);
    }
    case "rate_limit": {
      const retryAfter = "retry_after" in fault ? fault.retry_after : 1;
      throw botError(429, `retry after ${retryAfter}`, { retry_after: retryAfter });
    }
    case "hang":
      // Released: the call goes on to its own answer. Cut or closed: nothing more to send.
      if (await deps.exchanges.hang(exchange.closed)) return false;
      reply.hijack();
      return true;
    // A call that came in as the listener closed (the "refuse" outage) is cut like a drop.
    case "refuse":
    case "drop":
      reply.hijack();
      exchange.record.ended = "dropped";
      exchange.res.destroy();
      return true;
    default: {
      const unreachable: never = type;
      throw new Error(`unknown fault ${String(unreachable)}`);
    }
  }
}

function open(deps: SimDeps, request: FastifyRequest, reply: FastifyReply, method: string): Exchange {
  const res = reply.raw;
  const record = deps.state.record({
    method,
    params: {},
    verb: request.method,
    at: deps.clock.now(),
    fault: null,
    status: null,
    answer: null,
    ended: "open",
    ended_at: null,
  });
  const controller = new AbortController();
  const exchange: Exchange = { res, record, closed: controller.signal };
  deps.exchanges.opened(exchange);
  let finished = false;
  res.once("finish", () => {
    finished = true;
  });
  res.once("close", () => {
    if (record.ended === "open")
      record.ended = finished || res.writableFinished ? "answered" : "client_closed";
    record.ended_at = deps.clock.now();
    if (!res.headersSent) record.status = null;
    controller.abort();
    deps.exchanges.settled(exchange);
    deps.state.changed();
  });
  return exchange;
}
