// The dashboard's HTTP app, built from the Dashboard and callable in-process: only loopback Host
// headers (a page elsewhere pointing its own name at 127.0.0.1 must not read the transcripts), only
// GET and HEAD, the security headers on every answer, and errors as {"error":{"code","message",
// "hint"}}, the shape the page reads. It never listens: the `tenax dashboard` command does.
import { connectionLimits } from "../config/connections-schema.js";
import { type App, createApp } from "../http/app.js";
import { loopbackHostHeader } from "../http/host-header.js";
import type { HttpError } from "../http/http-error.js";
import { registerApiRoutes } from "./routes/api.js";
import { registerPageRoutes } from "./routes/page.js";
import type { Dashboard } from "./server.js";
import { dashboardError } from "./store-view.js";

export const SECURITY_HEADERS = {
  // Transcripts are untrusted text: no inline script, nothing from elsewhere, no framing.
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
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
      if (!loopbackHostHeader(request.headers.host))
        throw dashboardError(
          403,
          "host_not_allowed",
          `the dashboard answers only requests addressed to a loopback host, not ${JSON.stringify(request.headers.host ?? "")}`,
          "open it as http://127.0.0.1:PORT or http://localhost:PORT",
        );
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
  registerPageRoutes(app, dashboard);
  registerApiRoutes(app, dashboard);
  return app;
}
