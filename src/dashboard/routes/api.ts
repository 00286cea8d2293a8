// The JSON the page polls: overview, gateway probe, layers, sessions, search, a transcript, and the
// recent events of the gateway's feed. Query values are whole numbers in a range (400 otherwise).
import type { App } from "../../http/app.js";
import type { Dashboard } from "../server.js";
import { dashboardError, listSessions, searchSessions, transcript } from "../store-view.js";

const GET_HEAD = ["GET", "HEAD"] as const;

function intParam(query: unknown, name: string, fallback: number, min: number, max: number): number {
  const given = (query as Record<string, unknown>)[name];
  // A repeated parameter counts by its first value.
  const raw = Array.isArray(given) ? given[0] : given;
  if (raw === undefined) return fallback;
  const value = String(raw);
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < min || n > max)
    throw dashboardError(
      400,
      "invalid_query",
      `${name} must be a whole number from ${min} to ${max}, not "${value}"`,
    );
  return n;
}

export function registerApiRoutes(app: App, dashboard: Dashboard): void {
  const get = (url: string, handler: (query: unknown, params: Record<string, string>) => unknown) =>
    app.route({
      method: [...GET_HEAD],
      url,
      handler: async (request) => handler(request.query, request.params as Record<string, string>),
    });
  get("/api/overview", () => dashboard.overview());
  get("/api/gateway", () => dashboard.gatewayView());
  get("/api/layers", () => dashboard.cachedLayers());
  get("/api/sessions", async (query) => ({
    sessions: await listSessions(
      dashboard.paths,
      intParam(query, "limit", 50, 1, 500),
      intParam(query, "offset", 0, 0, Number.MAX_SAFE_INTEGER),
    ),
  }));
  get("/api/sessions/:id", (_query, params) => transcript(dashboard.paths, params.id ?? ""));
  get("/api/search", (query) => {
    const given = (query as { q?: unknown }).q;
    const q = Array.isArray(given) ? given[0] : given;
    const words = typeof q === "string" ? q.trim() : "";
    if (words === "")
      throw dashboardError(400, "empty_query", "give the words to search for: /api/search?q=WORDS");
    return searchSessions(dashboard.paths, words);
  });
  get("/api/events", (query) => dashboard.events(intParam(query, "after", 0, 0, Number.MAX_SAFE_INTEGER)));
}
