// The base of every Tenax HTTP app (gateway, dashboard, simulator): a Fastify instance that answers
// every failure in one JSON shape: an HttpError as it is, a zod failure as a 400 naming the field,
// Fastify's own refusals (too large 413, not JSON 415, bad URL 400, unknown route 404, a method the
// route does not take 405 with Allow), a request Node cannot parse, and anything unexpected as a
// 500. Its one body parser reads JSON for the routes that take it (`config.jsonBody`), with the
// size limit and the depth guard, and the text of any body for the few routes that must take what
// a client sends as it is (`config.rawBody`). The app never listens: the entry point does (listen.ts).
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { errorMessage } from "../core/errors.js";
import {
  ConnectionGuard,
  type ConnectionLimits,
  type ConnectionStats,
  DEFAULT_CONNECTION_LIMITS,
} from "./connection-guard.js";
import { HttpError, methodNotAllowed, typeForStatus } from "./http-error.js";
import {
  MAX_BODY_BYTES,
  mediaTypeProblem,
  readJsonBody,
  readRawBody,
  tooLarge,
  unsupportedMediaType,
} from "./json-body.js";
import { answerClientError } from "./node-http.js";
import { isZodError, zodHttpError } from "./validate.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route reads a JSON body: any other media type is a 415 before a byte is read. */
    jsonBody?: boolean;
    /**
     * The route takes a body of any media type and shape, as text (`request.body` is a string, ""
     * for none): a stand-in for a provider, which must see what a client really sent. Only the
     * size limit applies (413 beyond it); the route parses and validates it itself.
     */
    rawBody?: boolean;
    /** The route needs no credentials (the gate's auth skips it): GET /health/live. */
    public?: boolean;
    /** Set by refuseOtherMethods on the 405 routes it adds. */
    methodRefusal?: boolean;
  }
}

export type App = FastifyInstance;

export interface AppOptions {
  /** The largest JSON body read (413 beyond it). */
  bodyLimit?: number;
  /**
   * Runs first on every request, also one the router refuses (a bad URL): the web checks and
   * auth. Throws the HttpError that refuses; "answered" when it answered itself (a preflight).
   */
  gate?: (request: FastifyRequest, reply: FastifyReply) => "answered" | "continue";
  /** The app's own mapping of an error it knows (the store refused: 503), tried first. */
  mapError?: (error: unknown) => HttpError | null;
  /** The 404 for a path no route serves. */
  notFound?: (method: string, path: string) => HttpError;
  /** Headers every answer of this app carries, errors included (the dashboard's security headers). */
  headers?: Record<string, string>;
  /** What a path's parts are called (`/api/sessions/X`: "session id"), for a part that does not decode. */
  pathPartName?: (path: string) => string | null;
  /** Headers an error answer to this request also carries (the session id a chat named). */
  errorHeaders?: (request: FastifyRequest) => Record<string, string>;
  /** The error body, when the app's clients expect another shape than toJSON(). */
  errorBody?: (error: HttpError) => unknown;
  /** How long a connection may take to send its request, and how many are held (connection-guard.ts). */
  connections?: Partial<ConnectionLimits>;
}

/** Every method a route may be asked with; the ones it does not take are a 405. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] as const;

interface PathRoutes {
  methods: Set<string>;
  /** Needs no credentials: its 405 does not either (POST /health/live is a 405, not a 401). */
  public: boolean;
}

const routesOf = new WeakMap<App, Map<string, PathRoutes>>();
const guardOf = new WeakMap<App, ConnectionGuard>();

/** What the app's connection guard has done: connections held, waiting, closed, refused. */
export function connectionStats(app: App): ConnectionStats {
  const guard = guardOf.get(app);
  if (!guard) throw new Error("connectionStats takes an app made by createApp");
  return guard.stats();
}

export function createApp(options: AppOptions = {}): App {
  const bodyLimit = options.bodyLimit ?? MAX_BODY_BYTES;
  const gate = options.gate;
  const send = (reply: FastifyReply, error: HttpError) => sendError(reply, error, options);
  const app = Fastify({
    logger: false,
    bodyLimit,
    // HEAD is served where a route says so (GET /health/live), as before: not on every GET.
    exposeHeadRoutes: false,
    // The server's timeouts and connection limit are the connection guard's, set below.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 4096 },
    clientErrorHandler: answerClientError,
    // A URL the router cannot decode is answered only after the gate, like any request.
    frameworkErrors: (error, request, reply) => {
      try {
        if (gate?.(request, reply) === "answered") return;
      } catch (refused) {
        send(reply, toHttpError(refused, request, options, bodyLimit));
        return;
      }
      send(reply, toHttpError(error, request, options, bodyLimit));
    },
  });
  guardOf.set(app, new ConnectionGuard(app.server, { ...DEFAULT_CONNECTION_LIMITS, ...options.connections }));
  const routes = new Map<string, PathRoutes>();
  routesOf.set(app, routes);
  app.addHook("onRoute", (route) => {
    if (route.config?.methodRefusal === true) return;
    const path = routes.get(route.url) ?? { methods: new Set<string>(), public: false };
    for (const m of [route.method].flat()) path.methods.add(m);
    path.public ||= route.config?.public === true;
    routes.set(route.url, path);
  });
  if (gate)
    app.addHook("onRequest", (request, reply, done) => {
      let outcome: "answered" | "continue";
      try {
        outcome = gate(request, reply);
      } catch (error) {
        done(error as Error);
        return;
      }
      if (outcome === "continue") done();
    });
  const headers = options.headers;
  if (headers)
    app.addHook("onRequest", (_request, reply, done) => {
      reply.headers(headers);
      done();
    });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (request, payload, done) => {
    const config = request.routeOptions.config;
    // Only through done: a parser that also returns a promise has Fastify call done a second
    // time when it settles, and the route's handler runs twice for the one request.
    if (config.rawBody === true) {
      readRawBody(payload, bodyLimit).then(
        (text) => done(null, text),
        (error: unknown) => done(error as Error),
      );
      return;
    }
    // A route that reads no body ignores one (Node discards it once the answer is sent).
    if (config.jsonBody !== true) return done(null, undefined);
    readJsonBody(payload, request.headers["content-type"], bodyLimit).then(
      (body) => done(null, body),
      (error: unknown) => done(error as Error),
    );
  });
  app.setErrorHandler((error, request, reply) => {
    if (reply.raw.headersSent) {
      reply.raw.end();
      return;
    }
    const failure = toHttpError(error, request, options, bodyLimit);
    send(reply, options.errorHeaders ? failure.withHeaders(options.errorHeaders(request)) : failure);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "/";
    send(
      reply,
      options.notFound?.(request.method, path) ??
        new HttpError(404, "not_found_error", "unknown_route", `no route ${request.method} ${path}`),
    );
  });
  return app;
}

/**
 * Call once every route is registered: each path answers the methods it does not take with a 405
 * naming the ones it does (Fastify alone would say 404).
 */
export function refuseOtherMethods(app: App): void {
  const routes = routesOf.get(app);
  if (!routes) throw new Error("refuseOtherMethods takes an app made by createApp");
  for (const [url, path] of [...routes]) {
    const allowed = [...path.methods];
    const others = METHODS.filter((m) => !path.methods.has(m));
    if (others.length === 0) continue;
    app.route({
      method: others,
      url,
      config: { methodRefusal: true, public: path.public },
      handler: (request) => {
        throw methodNotAllowed(request.method, allowed);
      },
    });
  }
}

/**
 * The routes an app made by createApp has registered so far: each path and the methods it takes
 * (the 405 answers of refuseOtherMethods left out). What a gateway serves is read from here.
 */
export function registeredRoutes(app: App): ReadonlyMap<string, ReadonlySet<string>> {
  const routes = routesOf.get(app);
  if (!routes) throw new Error("registeredRoutes takes an app made by createApp");
  return new Map([...routes].map(([url, path]) => [url, path.methods]));
}

/** A JSON route's body: what the parser read, or the 415/400 when there was none to read. */
export function jsonBodyOf(request: FastifyRequest): unknown {
  if (request.body !== undefined) return request.body;
  const problem = mediaTypeProblem(request.headers["content-type"]);
  if (problem !== null) throw unsupportedMediaType(problem);
  throw new HttpError(
    400,
    "invalid_request_error",
    "invalid_json",
    "the request body is empty; send a JSON object",
  );
}

export function sendError(reply: FastifyReply, error: HttpError, options: AppOptions = {}): void {
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.end();
    return;
  }
  void reply
    .code(error.status)
    .headers({ ...options.headers, ...error.headers })
    .send(options.errorBody ? options.errorBody(error) : error.toJSON());
}

/** Any failure as the HttpError it is answered with. */
export function toHttpError(
  error: unknown,
  request: FastifyRequest | null,
  options: Pick<AppOptions, "mapError" | "pathPartName"> = {},
  bodyLimit = MAX_BODY_BYTES,
): HttpError {
  if (HttpError.isInstance(error)) return error;
  const own = options.mapError?.(error);
  if (own) return own;
  if (isZodError(error)) return zodHttpError(error);
  const framework = fastifyError(error, request, bodyLimit, options.pathPartName);
  if (framework) return framework;
  return new HttpError(500, "server_error", "internal_error", `the server failed: ${errorMessage(error)}`);
}

/** Fastify's own refusals, in our shape and words. */
function fastifyError(
  error: unknown,
  request: FastifyRequest | null,
  bodyLimit: number,
  pathPartName: AppOptions["pathPartName"],
): HttpError | null {
  if (!(error instanceof Error)) return null;
  const { code, statusCode } = error as Error & { code?: string; statusCode?: number };
  switch (code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return tooLarge(bodyLimit);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return unsupportedMediaType(
        mediaTypeProblem(request?.headers["content-type"]) ?? "the request's Content-Type is not valid",
      );
    case "FST_ERR_BAD_URL":
      return badUrl(request?.url ?? "", pathPartName);
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new HttpError(
        414,
        "invalid_request_error",
        "uri_too_long",
        "a part of the request path is too long",
      );
    default:
      if (typeof code === "string" && code.startsWith("FST_") && statusCode !== undefined && statusCode < 500)
        return new HttpError(statusCode, typeForStatus(statusCode), "invalid_request", error.message);
      return null;
  }
}

/** 400 `invalid_url`, naming the first part of the path that is not valid percent-encoding. */
function badUrl(url: string, pathPartName: AppOptions["pathPartName"]): HttpError {
  const path = url.split("?")[0] ?? "";
  const part =
    path.split("/").find((p) => {
      try {
        decodeURIComponent(p);
        return false;
      } catch {
        return true;
      }
    }) ?? path;
  const what = pathPartName?.(path) ?? "request path part";
  return new HttpError(
    400,
    "invalid_request_error",
    "invalid_url",
    `the ${what} ${JSON.stringify(part)} is not valid percent-encoding`,
  );
}
