// The login routes, the only ones that need no session: the one-time link (GET /auth/link), the
// bearer refresh (POST /auth/token), the login page (GET /auth/login), the OIDC redirect and its
// callback (GET /auth/oidc/start, /auth/oidc/callback), and /health/live; and, with a session, the
// logout (POST /auth/logout) and the list of logins the page shows (GET /api/logins).
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { type App, jsonBodyOf } from "../../http/app.js";
import { isLoopback } from "../../http/host-header.js";
import { clearedCookies, loginCookies, oidcCookie, readOidcCookie } from "../auth/cookies.js";
import type { Presented } from "../auth/dashboard-auth.js";
import { clientOf } from "../auth/failure-limit.js";
import { isLinkPreview, previewPage } from "../auth/login-page.js";
import { LINK_PATH } from "../auth/login-settings.js";
import { parsePending } from "../auth/oidc-outcomes.js";
import type { Dashboard } from "../server.js";
import { dashboardError } from "../store-view.js";

const HTML = "text/html; charset=utf-8";

const tokenRequest = z.strictObject({
  grant_type: z.literal("refresh_token", { error: 'expected grant_type "refresh_token"' }),
  refresh_token: z.string({ error: "expected refresh_token: the refresh token to exchange" }),
});

/** What the gate and the routes read of a request. */
export function presented(request: FastifyRequest, publicUrl: string | undefined): Presented {
  const peer = request.raw.socket.remoteAddress;
  const forwarded = request.headers["x-forwarded-proto"];
  // X-Forwarded-Proto is believed only from a proxy on this machine.
  const fromLoopbackProxy = isLoopback((peer ?? "").replace(/^::ffff:/, ""));
  return {
    authorization: request.headers.authorization,
    cookie: request.headers.cookie,
    client: clientOf(peer, request.headers["x-forwarded-for"]),
    secure:
      publicUrl?.startsWith("https:") === true ||
      (fromLoopbackProxy && (Array.isArray(forwarded) ? forwarded[0] : forwarded) === "https"),
    userAgent: request.headers["user-agent"] ?? null,
  };
}

export function registerAuthRoutes(app: App, dashboard: Dashboard): void {
  const auth = dashboard.auth;
  const who = (request: FastifyRequest) => presented(request, dashboard.config.dashboard.public_url);

  // For a reverse proxy's or a monitor's liveness check: answers whenever the process serves HTTP.
  app.route({
    method: ["GET", "HEAD"],
    url: "/health/live",
    config: { public: true },
    handler: async () => ({ status: "ok" }),
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/auth/login",
    config: { public: true },
    handler: async (_request, reply) => {
      if (auth.mode === "none") return reply.redirect("/", 303);
      return reply.type(HTML).send(dashboard.loginPage(null));
    },
  });

  app.route({
    method: ["GET", "HEAD"],
    url: LINK_PATH,
    config: { public: true },
    handler: async (request, reply) => {
      if (auth.mode !== "token")
        throw dashboardError(
          404,
          "not_token_mode",
          `login links are for dashboard.auth.mode token; this dashboard's mode is ${auth.mode}`,
          auth.mode === "none" ? "open / directly" : "log in at /auth/login",
        );
      const facts = who(request);
      // A chat app drawing a card for the pasted link must not use it up.
      if (isLinkPreview(facts.userAgent)) return reply.type(HTML).send(previewPage());
      const token = firstString((request.query as Record<string, unknown>).token);
      if (token === null)
        throw dashboardError(
          400,
          "missing_token",
          "this login link has no token",
          "run tenax dashboard link",
        );
      const redeemed = await auth.redeem(token, facts);
      if (!redeemed.ok)
        return reply
          .code(401)
          .type(HTML)
          .send(dashboard.loginPage({ message: redeemed.message, hint: redeemed.hint }));
      return reply
        .header("set-cookie", loginCookies(redeemed, dashboard.now(), facts.secure))
        .redirect("/", 303);
    },
  });

  app.route({
    method: "POST",
    url: "/auth/token",
    config: { public: true, jsonBody: true },
    handler: async (request) => {
      if (auth.mode === "none")
        throw dashboardError(404, "auth_off", "this dashboard has no logins (dashboard.auth.mode none)");
      const body = tokenRequest.parse(jsonBodyOf(request));
      const renewed = await auth.refresh(body.refresh_token, who(request));
      if (!renewed.ok && renewed.reason === "provider_unavailable")
        // The cookie gate's code for the same wait (dashboard-auth.ts identify): one code to retry on.
        throw dashboardError(503, "identity_provider_unavailable", renewed.message, renewed.hint);
      if (!renewed.ok) throw dashboardError(401, `login_${renewed.reason}`, renewed.message, renewed.hint);
      return {
        access_token: renewed.access_token,
        token_type: "Bearer",
        expires_in: Math.max(0, Math.floor((renewed.access_expires_at - dashboard.now()) / 1000)),
        refresh_token: renewed.refresh_token,
        refresh_expires_in: Math.max(0, Math.floor((renewed.refresh_expires_at - dashboard.now()) / 1000)),
      };
    },
  });

  registerOidcRoutes(app, dashboard);

  app.route({
    method: "POST",
    url: "/auth/logout",
    handler: async (request, reply) => {
      const loginId = dashboard.loginOf(request);
      if (loginId !== null) await (await auth.logins()).revoke(loginId, "operator");
      return reply.header("set-cookie", clearedCookies(who(request).secure)).redirect("/auth/login", 303);
    },
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/api/logins",
    handler: async (request) => {
      if (auth.mode === "none") return { mode: "none", logins: [], current: null };
      const book = await auth.logins();
      return { mode: auth.mode, logins: await book.list(), current: dashboard.loginOf(request) };
    },
  });
}

/**
 * Mode oidc: /auth/oidc/start sends the browser to the provider (the login under way kept in a
 * short-lived cookie), /auth/oidc/callback takes it back, and a user the provider vouches for and
 * `allowed` lists gets a login like a link's.
 */
function registerOidcRoutes(app: App, dashboard: Dashboard): void {
  const auth = dashboard.auth;
  const callbackOf = (request: FastifyRequest, secure: boolean) => {
    const publicUrl = dashboard.config.dashboard.public_url;
    const base = publicUrl?.replace(/\/+$/, "") ?? `${secure ? "https" : "http"}://${request.headers.host}`;
    return `${base}/auth/oidc/callback`;
  };
  const needOidc = () => {
    if (auth.mode !== "oidc")
      throw dashboardError(
        404,
        "not_oidc_mode",
        `this dashboard logs in with mode ${auth.mode}, not oidc`,
        "log in at /auth/login",
      );
    return auth.oidc();
  };

  app.route({
    method: ["GET", "HEAD"],
    url: "/auth/oidc/start",
    config: { public: true },
    handler: async (request, reply) => {
      const oidc = needOidc();
      const facts = presented(request, dashboard.config.dashboard.public_url);
      auth.checkLimit(facts.client);
      const begun = await oidc.begin(callbackOf(request, facts.secure));
      if (!begun.ok)
        return reply
          .code(begun.transient ? 503 : 502)
          .type(HTML)
          .send(dashboard.loginPage({ message: begun.message, hint: begun.hint }));
      return reply
        .header("set-cookie", oidcCookie(JSON.stringify(begun.pending), facts.secure))
        .redirect(begun.url.href, 303);
    },
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/auth/oidc/callback",
    config: { public: true },
    handler: async (request, reply) => {
      const oidc = needOidc();
      const facts = presented(request, dashboard.config.dashboard.public_url);
      auth.checkLimit(facts.client);
      const cleared = oidcCookie(null, facts.secure);
      const pending = parsePending(parseJson(readOidcCookie(request.headers.cookie)));
      const redirectUri = callbackOf(request, facts.secure);
      const finished =
        pending === null
          ? {
              ok: false as const,
              message: "this login was not started here, or took over 10 minutes at the provider",
              hint: "start again at /auth/login",
            }
          : await oidc.finish(new URL(request.url, redirectUri), pending, redirectUri);
      if (!finished.ok) {
        // A provider that did not answer is no failed login: it is not counted, and it is a 503.
        const transient = "transient" in finished && finished.transient;
        if (!transient) auth.failedOidc(finished.message, facts);
        return reply
          .code(transient ? 503 : 401)
          .header("set-cookie", cleared)
          .type(HTML)
          .send(dashboard.loginPage({ message: finished.message, hint: finished.hint }));
      }
      const started = await auth.startOidcLogin(finished, facts);
      return reply
        .header("set-cookie", [cleared, ...loginCookies(started, dashboard.now(), facts.secure)])
        .redirect("/", 303);
    },
  });
}

function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Answer a request that has no session: the login page for the page itself, a 401 for the rest. */
export function refuseWithoutLogin(
  request: FastifyRequest,
  reply: FastifyReply,
  dashboard: Dashboard,
  problem: { message: string; hint: string } | null,
): FastifyReply {
  const path = request.url.split("?")[0] ?? "/";
  if (path === "/" && (request.method === "GET" || request.method === "HEAD"))
    return reply.code(401).type(HTML).send(dashboard.loginPage(problem));
  throw dashboardError(
    401,
    "login_required",
    problem?.message ?? `the dashboard needs a login: ${request.method} ${path} was sent without one`,
    problem?.hint ??
      (dashboard.auth.mode === "token"
        ? "open a login link (tenax dashboard link), or send Authorization: Bearer ACCESS_TOKEN"
        : "log in at /auth/login, or send Authorization: Bearer ACCESS_TOKEN"),
  );
}

function firstString(value: unknown): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === "string" && first !== "" ? first : null;
}
