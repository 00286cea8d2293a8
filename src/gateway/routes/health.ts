// GET /health/live (no key: the process serves HTTP), and with the health routes wired (as
// `tenax gateway run` always does) GET /health, GET /metrics and GET /api/events (SSE).
import type { App } from "../../http/app.js";
import type { GatewayRouteDeps } from "../app.js";

export function registerHealthRoutes(app: App, deps: GatewayRouteDeps): void {
  app.route({
    method: ["GET", "HEAD"],
    url: "/health/live",
    config: { public: true },
    handler: async () => ({ status: "ok" }),
  });
  const health = deps.health;
  if (!health) return;
  app.get("/health", async (_request, reply) => {
    const { status, body } = await health.health();
    return reply.code(status).send(body);
  });
  app.get("/metrics", async (_request, reply) =>
    reply.type("text/plain; version=0.0.4; charset=utf-8").send(await health.metrics()),
  );
  app.get<{ Querystring: { last_event_id?: string } }>("/api/events", (request, reply) => {
    reply.hijack();
    health.events(reply.raw, request.headers["last-event-id"] ?? request.query.last_event_id ?? null);
  });
}
