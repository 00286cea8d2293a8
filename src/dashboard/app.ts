// The dashboard's HTTP app, built from the Dashboard and callable in-process. Before any route: the
// Host must be a name the dashboard is reached by (loopback, the address it is bound to, or
// dashboard.public_url's host; a page elsewhere pointing its own name at this machine must not read
// the transcripts); only GET and HEAD, but for the login routes' POSTs, whose Origin, when a browser
// sends one, must be the dashboard's own; then a login (auth/dashboard-auth.ts), but on the login
// routes. The security headers go on every answer, and errors as {"error":{"code","message",
// "hint"}}, the shape the page reads. It never listens: the `tenax dashboard` command does.
import { connectionLimits } from "../config/connections-schema.js";
import { type App, createApp } from "../http/app.js";
import { boundNames, hostAllowed, isLoopback } from "../http/host-header.js";
import { HttpError } from "../http/http-error.js";
import type { Identity } from "./auth/dashboard-auth.js";
import { registerApiRoutes } from "./routes/api.js";
import { presented, refuseWithoutLogin, registerAuthRoutes } from "./routes/auth.js";
import { registerPageRoutes } from "./routes/page.js";
import type { Dashboard } from "./server.js";
import { dashboardError } from "./store-view.js";

export const SECURITY_HEADERS = {
  // Transcripts are untrusted text: no inline script, nothing from elsewhere, no framing.
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  // No Referer to other sites (a transcript's URL stays here); same-origin requests keep theirs, and
  // with it a real Origin on the page's own POSTs (no-referrer makes a form's Origin "null").
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};

export function buildDashboardApp(dashboard: Dashboard): App {
  const app = createApp({
    headers: SECURITY_HEADERS,
    connections: connectionLimits(dashboard.config.dashboard.connections),
    errorBody: (error: HttpError) => ({
      error: { code: error.code, message: error.message, hint: error.details.error?.hint ?? null },
    }),
    mapError: (error) =>
      error instanceof Error && !("statusCode" in error) && !("issues" in error)
        ? dashboardError(500, "internal", `the dashboard failed (a bug in Tenax): ${error.message}`)
        : null,
    pathPartName: (path) => (path.startsWith("/api/sessions/") ? "session id" : null),
    gate: (request) => {
      const publicUrl = dashboard.config.dashboard.public_url;
      const publicHost = publicUrl === undefined ? null : new URL(publicUrl).hostname;
      const at = dashboard.listening();
      const policy = {
        bound: () => (at === null ? [] : boundNames(at.host)),
        port: at?.port ?? null,
        extra: publicHost === null ? [] : [publicHost],
      };
      if (!hostAllowed(request.headers.host, policy))
        throw dashboardError(
          403,
          "host_not_allowed",
          `the dashboard answers only requests addressed to a loopback host${publicHost === null ? "" : ` or ${publicHost}`}, not ${JSON.stringify(request.headers.host ?? "")}`,
          publicHost === null
            ? "open it as http://127.0.0.1:PORT or http://localhost:PORT; behind a reverse proxy, set dashboard.public_url to the address people open"
            : `open it as ${publicUrl}`,
        );
      const path = request.url.split("?")[0] ?? "/";
      if (request.method === "POST" && POST_ROUTES.has(path.replace(/\/+$/, ""))) {
        checkOrigin(request.headers.origin, request.headers.host, publicUrl);
        return "continue";
      }
      if (request.method !== "GET" && request.method !== "HEAD")
        throw dashboardError(
          405,
          "method_not_allowed",
          `the dashboard only reads: ${request.method} is not allowed`,
        );
      return "continue";
    },
    notFound: (_method, path) =>
      dashboardError(404, "not_found", `no dashboard route ${path.replace(/\/+$/, "") || "/"}`),
  });
  // After the gate: a login, on every route but the login routes (and the page's stylesheet, which
  // the login page uses).
  app.addHook("onRequest", async (request, reply) => {
    if (request.routeOptions.config.public === true) return;
    refuseNoneOffLoopback(dashboard);
    const page = (request.url.split("?")[0] ?? "/") === "/";
    let identity: Identity;
    try {
      identity = await dashboard.auth.identify(presented(request, dashboard.config.dashboard.public_url));
    } catch (error) {
      // The store or the identity provider could not be asked: a person opening the page reads why
      // on the login page (503), a script the JSON error.
      if (!page || !HttpError.isInstance(error) || error.status !== 503) throw error;
      const hint = error.details.error?.hint;
      return reply
        .code(503)
        .type("text/html; charset=utf-8")
        .send(dashboard.loginPage({ message: error.message, hint: typeof hint === "string" ? hint : "" }));
    }
    // A refused login's cookies are dropped by the page itself (GET /), which says why: an API call
    // that dropped them would send the page there with nothing left to tell.
    if (identity.cookies.length > 0 && (identity.ok || page))
      void reply.header("set-cookie", identity.cookies);
    if (identity.ok) {
      dashboard.admit(request, identity.login_id);
      return;
    }
    const problem = identity.refusal
      ? { message: identity.refusal.message, hint: identity.refusal.hint }
      : dashboard.auth.storeProblem();
    return refuseWithoutLogin(request, reply, dashboard, problem);
  });
  registerAuthRoutes(app, dashboard);
  registerPageRoutes(app, dashboard);
  registerApiRoutes(app, dashboard);
  return app;
}

/**
 * Mode none is for loopback: the start refuses it elsewhere, and so does every request when
 * config.yaml is edited to it while the dashboard serves another address.
 */
function refuseNoneOffLoopback(dashboard: Dashboard): void {
  const at = dashboard.listening();
  if (dashboard.auth.mode !== "none" || at === null || isLoopback(at.host)) return;
  throw dashboardError(
    403,
    "auth_none_off_loopback",
    `dashboard.auth.mode none is for loopback only, and this dashboard listens on ${at.host}: it shows nothing without a login`,
    "set dashboard.auth.mode back to token (or oidc), or serve the dashboard on 127.0.0.1",
  );
}

/** The routes a browser may POST to: the bearer refresh and the logout. */
const POST_ROUTES = new Set(["/auth/token", "/auth/logout"]);

/**
 * A POST from a browser carries the page's origin: only the dashboard's own (the name it was
 * reached by, over http or https, or public_url's) may log out or refresh; without an Origin it
 * is not a browser's cross-site request (curl, the desktop app).
 */
function checkOrigin(
  origin: string | undefined,
  host: string | undefined,
  publicUrl: string | undefined,
): void {
  if (origin === undefined) return;
  const own = [`http://${host}`, `https://${host}`].map((u) => {
    try {
      return new URL(u).origin;
    } catch {
      return null;
    }
  });
  if (publicUrl !== undefined) own.push(new URL(publicUrl).origin);
  if (own.includes(origin)) return;
  throw dashboardError(
    403,
    "origin_not_allowed",
    `a page at ${JSON.stringify(origin)} may not post to the dashboard`,
    "log in and out from the dashboard's own page",
  );
}
