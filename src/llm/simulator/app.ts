// The simulator provider's HTTP app, built from its dependencies and callable in-process
// (`app.inject()`): every request but the control ones is recorded from its arrival to the close of
// its response, then answered by the routes of routes/. It never listens: server.ts opens the port.
import type { FastifyRequest } from "fastify";
import { type Clock, realSleep, type Sleep, systemClock } from "../../core/deps.js";
import { type App, createApp } from "../../http/app.js";
import { MAX_BODY_BYTES, parseJson, simError, simErrorBody } from "./respond.js";
import { registerChatRoutes } from "./routes/chat.js";
import { registerControlRoutes } from "./routes/control.js";
import { registerModelRoutes } from "./routes/models.js";
import type { Exchange, SimulatorState } from "./state.js";
import { DEFAULT_SIM_MODELS, type SimModel } from "./types.js";
import { errorBody } from "./wire.js";

export interface SimulatorAppDeps {
  /** The queue of scripted steps and the record of requests, shared with whoever drives it. */
  state: SimulatorState;
  /** The models it serves; a request for another model gets a 404 model_not_found. */
  models?: Record<string, SimModel>;
  clock?: Clock;
  sleep?: Sleep;
}

/** What a route file is given. */
export interface SimRouteDeps {
  state: SimulatorState;
  models: Record<string, SimModel>;
  clock: Clock;
  sleep: Sleep;
  /** The exchange recorded for a request (every request outside /__sim/ has one). */
  exchangeOf(request: FastifyRequest): Exchange;
}

const CONTROL = "/__sim/";

export function buildSimulatorApp(input: SimulatorAppDeps): App {
  const exchanges = new WeakMap<FastifyRequest, Exchange>();
  const deps: SimRouteDeps = {
    state: input.state,
    models: input.models ?? DEFAULT_SIM_MODELS,
    clock: input.clock ?? systemClock,
    sleep: input.sleep ?? realSleep,
    exchangeOf(request) {
      const exchange = exchanges.get(request);
      if (!exchange) throw new Error(`no exchange recorded for ${request.method} ${request.url}`);
      return exchange;
    },
  };
  const app = createApp({
    bodyLimit: MAX_BODY_BYTES,
    errorBody: simErrorBody,
    notFound,
    pathPartName: (path) => (path.startsWith("/v1/models/") ? "model id" : null),
  });
  app.addHook("onRequest", (request, reply, done) => {
    const path = pathOf(request.url);
    if (!path.startsWith(CONTROL)) exchanges.set(request, open(deps, request, reply.raw, path));
    done();
  });
  // The body as the request sent it: the parsed JSON, or null when there was none or it was not JSON.
  app.addHook("preHandler", (request, _reply, done) => {
    const exchange = exchanges.get(request);
    if (exchange && typeof request.body === "string") exchange.record.body = parseJson(request.body);
    done();
  });
  registerModelRoutes(app, deps);
  registerChatRoutes(app, deps);
  registerControlRoutes(app, deps);
  // Every other path and method, also recorded with its body: a 404 as a provider answers it.
  app.all("*", { config: { rawBody: true } }, async (request) => {
    throw notFound(request.method, pathOf(request.url));
  });
  return app;
}

function open(deps: SimRouteDeps, request: FastifyRequest, res: Exchange["res"], path: string): Exchange {
  const { clock, state } = deps;
  const record = state.record({
    method: request.method,
    path,
    headers: { ...request.headers },
    body: null,
    received_at: clock.now(),
    step: null,
    status: null,
    ended: "open",
    ended_at: null,
    remote_port: request.raw.socket.remotePort ?? null,
  });
  const controller = new AbortController();
  const exchange: Exchange = { res, record, closed: controller.signal };
  state.opened(exchange);
  // Ended in full before it closed: 'finish' also where writableFinished is not kept (inject()).
  let finished = false;
  res.once("finish", () => {
    finished = true;
  });
  res.once("close", () => {
    if (record.ended === "open")
      record.ended = finished || res.writableFinished ? "completed" : "client_closed";
    record.ended_at = clock.now();
    record.status = res.headersSent ? res.statusCode : null;
    controller.abort();
    state.settled(exchange);
  });
  return exchange;
}

function notFound(method: string, path: string) {
  if (path.startsWith(CONTROL))
    return simError(404, errorBody(`no control route ${method} ${path}`, "invalid_request_error"));
  return simError(
    404,
    errorBody(`the simulator has no route ${method} ${path}`, "invalid_request_error", "unknown_url"),
  );
}

function pathOf(url: string): string {
  return new URL(url, "http://simulator").pathname;
}
