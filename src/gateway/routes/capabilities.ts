// GET /api/capabilities: only what this gateway really serves, read from the routes the app
// registered, so the list can neither promise a family that is not wired nor leave out one that
// is. Each family is named here once, with the route that serves it and the paths it owns; a
// route of no family stops the app from being built (checkCapabilities), so a new family cannot
// be served without a name a client can probe for.
import { type App, registeredRoutes } from "../../http/app.js";
import type { GatewayRouteDeps } from "../app.js";

interface Family {
  /** The capability a client probes for. */
  name: string;
  /** The route whose registration means the family is served; the family's routes are its path and what lies under it. */
  method: string;
  url: string;
}

const family = (name: string, route: string): Family => {
  const [method = "", url = ""] = route.split(" ");
  return { name, method, url };
};

/** In the order the list gives them. */
export const FAMILIES: readonly Family[] = [
  family("chat.completions", "POST /v1/chat/completions"),
  // Every chat completion may stream: the same route.
  family("chat.completions.stream", "POST /v1/chat/completions"),
  family("models", "GET /v1/models"),
  family("responses", "POST /v1/responses"),
  family("sessions", "GET /api/sessions"),
  family("runs", "POST /v1/runs"),
  family("jobs", "GET /api/jobs"),
  family("platforms", "GET /api/platforms"),
  family("health", "GET /health"),
  family("metrics", "GET /metrics"),
  family("events", "GET /api/events"),
];

/** Routes that are no family a client probes for: this one, and the liveness check every gateway serves. */
const OWN = ["/api/capabilities", "/health/live"];

export const under = (url: string, path: string) => url === path || url.startsWith(`${path}/`);

/** The capabilities the registered routes serve, and the routes that belong to no family. */
export function capabilitiesOf(routes: ReadonlyMap<string, ReadonlySet<string>>): {
  capabilities: string[];
  unlisted: string[];
} {
  const capabilities = FAMILIES.filter((f) => routes.get(f.url)?.has(f.method) === true).map((f) => f.name);
  const unlisted = [...routes.keys()].filter(
    (url) => !OWN.includes(url) && !FAMILIES.some((f) => under(url, f.url)),
  );
  return { capabilities, unlisted };
}

/** Call once every route is registered: a route of no family is a mistake in Tenax, caught by any test. */
export function checkCapabilities(app: App): void {
  const { unlisted } = capabilitiesOf(registeredRoutes(app));
  if (unlisted.length > 0)
    throw new Error(
      `routes ${unlisted.join(", ")} belong to no capability: name their family in src/gateway/routes/capabilities.ts`,
    );
}

export function registerCapabilityRoutes(app: App, deps: GatewayRouteDeps): void {
  app.get("/api/capabilities", async () => ({
    version: deps.version,
    capabilities: capabilitiesOf(registeredRoutes(app)).capabilities,
  }));
}
