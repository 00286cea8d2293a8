// GET /api/capabilities: only what this gateway really serves; a client probes this instead of
// assuming.
import type { App } from "../../http/app.js";
import type { GatewayRouteDeps } from "../app.js";

export const CAPABILITIES = [
  "chat.completions",
  "chat.completions.stream",
  "models",
  "responses",
  "sessions",
] as const;

/** Served when the gateway runs with its health routes (as `tenax gateway run` always does). */
export const HEALTH_CAPABILITIES = ["health", "metrics", "events"] as const;

export function registerCapabilityRoutes(app: App, deps: GatewayRouteDeps): void {
  const capabilities = [
    ...CAPABILITIES,
    ...(deps.runs ? ["runs"] : []),
    ...(deps.health ? HEALTH_CAPABILITIES : []),
  ];
  app.get("/api/capabilities", async () => ({ version: deps.version, capabilities }));
}
