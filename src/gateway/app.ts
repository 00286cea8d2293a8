// The gateway's HTTP app, built from its dependencies and callable in-process (`app.inject()`):
// the web checks (Host, Origin, CORS: web-guard.ts) and the key on every request before any
// route, then the routes of routes/. It never listens: run.ts opens the port.

import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Agent } from "../agent/agent.js";
import { connectionLimits } from "../config/connections-schema.js";
import type { TenaxConfig } from "../config/schema.js";
import { newId } from "../core/ids.js";
import { type App, createApp, refuseOtherMethods } from "../http/app.js";
import { boundNames } from "../http/host-header.js";
import { HttpError, headerValue } from "../http/http-error.js";
import { MAX_BODY_BYTES } from "../http/json-body.js";
import type { StorePort } from "../store/port.js";
import type { Gateway } from "./gateway.js";
import { storeUnavailable } from "./gateway-errors.js";
import type { HealthRoutes } from "./health-routes.js";
import { createModelCallHandler } from "./model-call.js";
import type { ModelCallHandler } from "./model-call-handler.js";
import { ModelCatalog } from "./model-catalog.js";
import { registerResponsesRoutes } from "./responses/routes.js";
import { checkCapabilities, registerCapabilityRoutes } from "./routes/capabilities.js";
import { registerChatRoutes } from "./routes/chat.js";
import { registerHealthRoutes } from "./routes/health.js";
import { type JobRoutesOptions, registerJobRoutes } from "./routes/jobs.js";
import { registerModelRoutes } from "./routes/models.js";
import { type PlatformRoutesOptions, registerPlatformRoutes } from "./routes/platforms.js";
import { type RunRoutesOptions, registerRunRoutes } from "./routes/runs.js";
import { registerSessionRoutes } from "./routes/sessions.js";
import type { RunRegistry } from "./runs.js";
import { guardRequest, type WebGuardPolicy } from "./web-guard.js";

export interface GatewayAppDeps {
  /** The turns: admission, running, watching, shutdown. */
  gateway: Gateway;
  agent: Agent;
  store: StorePort;
  config: TenaxConfig;
  version: string;
  /** The clock of ids and timestamps in answers; the gateway's by default. */
  now?: () => number;
  /** Where the server is bound, once it is (a Host naming it must carry this port). */
  listening?: () => { host: string; port: number } | null;
  /** GET /health, /metrics and /api/events; left out, they are not served. */
  health?: HealthRoutes;
  /** The runs API; left out, it is not served. */
  runs?: RunRegistry;
  runOptions?: RunRoutesOptions;
  /** /api/jobs (the profile's cron jobs, and running one now); left out, it is not served. */
  cron?: JobRoutesOptions;
  /** The chat platforms' routes; left out, /api/platforms/... answer that none is configured. */
  platforms?: PlatformRoutesOptions;
  /** `model: "PROVIDER/NAME"` chats; left out, the model-gateway mode over the agent's router. */
  modelCall?: ModelCallHandler;
  bodyLimit?: number;
}

/** What a route file is given. */
export type GatewayRouteDeps = GatewayAppDeps & {
  now: () => number;
  bodyLimit: number;
  modelCall: ModelCallHandler;
};

export function buildGatewayApp(input: GatewayAppDeps): App {
  const now = input.now ?? input.gateway.now;
  const deps: GatewayRouteDeps = {
    ...input,
    now,
    bodyLimit: input.bodyLimit ?? MAX_BODY_BYTES,
    // The model-gateway mode over the agent's own router (its pools, ledger, limits, fallback).
    modelCall:
      input.modelCall ??
      createModelCallHandler({
        router: input.agent.runtime.router,
        store: input.store,
        now,
        streamBufferBytes: input.config.gateway.stream_buffer_kb * 1024,
        stopping: () => input.gateway.isStopping,
        onStatus: (sessionId, event) => input.health?.onTurnEvent(sessionId, event),
      }),
  };
  const app = createApp({
    bodyLimit: deps.bodyLimit,
    connections: connectionLimits(input.config.gateway.connections),
    mapError: storeUnavailable,
    pathPartName: (path) =>
      path.startsWith("/api/sessions/")
        ? "session id"
        : path.startsWith("/api/jobs/")
          ? "job name"
          : path.startsWith("/v1/runs/")
            ? "run id"
            : path.startsWith("/v1/models/")
              ? "model id"
              : null,
    gate: (request, reply) => {
      deps.health?.observe(request.raw, reply.raw);
      // Before anything else: a page elsewhere must not get any answer it could use.
      if (guardRequest(request.raw, reply.raw, webPolicy(deps)) === "answered") {
        reply.hijack();
        return "answered";
      }
      if (!isPublic(request)) authorize(request, deps.config);
      return "continue";
    },
    // A chat that fails before its turn still names the session it asked for.
    errorHeaders: (request): Record<string, string> => {
      const id = request.url.startsWith("/v1/chat/")
        ? headerValue(request.headers["x-session-id"])
        : undefined;
      return id === undefined ? {} : { "x-session-id": id };
    },
    notFound: (method, path) =>
      new HttpError(
        404,
        "not_found_error",
        "unknown_route",
        `no route ${method} ${path.replace(/\/+$/, "") || "/"}`,
      ),
  });
  registerHealthRoutes(app, deps);
  registerCapabilityRoutes(app, deps);
  const catalog = new ModelCatalog(deps.agent.runtime.router, deps.config.gateway.default_model);
  registerModelRoutes(app, deps, catalog);
  registerChatRoutes(app, deps, catalog);
  registerResponsesRoutes(app, {
    store: deps.store,
    now: deps.now,
    newId: (prefix) => newId(prefix, deps.now()),
    streamBufferBytes: deps.config.gateway.stream_buffer_kb * 1024,
  });
  registerSessionRoutes(app, deps);
  if (deps.runs) registerRunRoutes(app, deps.runs, deps.runOptions);
  if (deps.cron) registerJobRoutes(app, deps.cron);
  registerPlatformRoutes(
    app,
    deps.platforms ?? {
      webhook: null,
      telegram: null,
      status: () => ({ status: "ok", detail: "no chat platforms configured", platforms: [] }),
    },
  );
  checkCapabilities(app);
  refuseOtherMethods(app);
  return app;
}

/** A route marked public (GET /health/live); a request the router refused has no route. */
function isPublic(request: FastifyRequest): boolean {
  try {
    return request.routeOptions.config.public === true;
  } catch {
    return false;
  }
}

function webPolicy(deps: GatewayRouteDeps): WebGuardPolicy {
  const at = deps.listening?.() ?? null;
  const gateway = deps.config.gateway;
  return {
    hosts: {
      bound: () => (at === null ? [] : boundNames(at.host)),
      port: at?.port ?? null,
      extra: gateway.allowed_hosts,
    },
    corsOrigins: gateway.cors_origins,
  };
}

/** The bearer key, unless gateway.auth is none; with no key at all nothing gets in. */
function authorize(request: FastifyRequest, config: TenaxConfig): void {
  const { auth, api_key: key } = config.gateway;
  if (auth === "none") return;
  const header = headerValue(request.headers.authorization) ?? "";
  const match = /^Bearer (.+)$/i.exec(header);
  if (key !== undefined && match && sameSecret(match[1] ?? "", key)) return;
  throw new HttpError(
    401,
    "authentication_error",
    "invalid_api_key",
    header === ""
      ? "this gateway needs an API key: send Authorization: Bearer KEY (the key is gateway.api_key, by default TENAX_API_KEY in the environment or the profile's .env, which the gateway's first start writes)"
      : "the API key is wrong: send Authorization: Bearer KEY with the gateway's key (gateway.api_key, by default TENAX_API_KEY in the environment or the profile's .env)",
    { "www-authenticate": "Bearer" },
  );
}

/** Compare secrets in constant time, whatever their lengths. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  const same = a.length === b.length;
  return timingSafeEqual(same ? a : b, b) && same;
}
