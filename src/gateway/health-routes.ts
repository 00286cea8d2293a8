// What the gateway's observability routes (routes/health.ts) serve, one model behind all three:
// GET /health (each layer's last checked state and its age; 503 when down), GET /metrics
// (Prometheus text) and GET /api/events (SSE of status events, resumable with Last-Event-ID
// while the ring holds them). It also turns
// every agent and store event into a feed event, and counts responses and finished turns.
import type { IncomingMessage, ServerResponse } from "node:http";
import { feedOfStoreEvent, feedOfTurnEvent } from "../agent/event-feed.js";
import type { AgentEvent, StoreEvent } from "../agent/events.js";
import { type EventHub, parseLastEventId } from "../health/event-hub.js";
import { type Counters, count, newCounters, renderMetrics } from "../health/metrics.js";
import type { HealthMonitor } from "../health/monitor.js";

export class HealthRoutes {
  readonly counters: Counters = newCounters();
  private readonly closing = new AbortController();

  constructor(
    readonly hub: EventHub,
    readonly monitor: HealthMonitor,
    private readonly gauges: () => { turns_in_flight: number; started_at: number },
  ) {}

  /** GET /health: each layer's last checked state (503 when down). */
  async health(): Promise<{ status: number; body: Awaited<ReturnType<HealthMonitor["report"]>> }> {
    const report = await this.monitor.report();
    return { status: report.status === "down" ? 503 : 200, body: report };
  }

  /** GET /metrics, in Prometheus text. */
  async metrics(): Promise<string> {
    const g = this.gauges();
    const cron = await this.monitor.cronView();
    return renderMetrics(
      await this.monitor.report(cron),
      this.counters,
      this.hub.totals(),
      { ...g, event_clients: this.hub.clients },
      this.monitor.providerCounters(),
      cron,
    );
  }

  /** GET /api/events: the status events after `lastId`, then live ones, on `res` (SSE). */
  events(res: ServerResponse, lastId: string | string[] | null | undefined): void {
    this.hub.serve(res, parseLastEventId(lastId), this.closing.signal);
  }

  /** Count each response by route group and code, for /metrics. */
  observe(req: IncomingMessage, res: ServerResponse): void {
    res.once("finish", () => count(this.counters.http, `${routeGroup(req.url ?? "/")} ${res.statusCode}`));
  }

  /** Feed events of the agent's turns: status events of every layer, and each turn's start and end. */
  onTurnEvent(sessionId: string, event: AgentEvent): void {
    if (event.type === "turn_finished") count(this.counters.turns, event.status);
    const published = feedOfTurnEvent(sessionId, event);
    if (published) this.hub.publish(published);
  }

  onStoreEvent(event: StoreEvent): void {
    // Counted by type, whatever the type: /metrics reads the ones it names (STORE_EVENT_COUNTERS).
    count(this.counters.store, event.type);
    const published = feedOfStoreEvent(event);
    if (published) this.hub.publish(published);
  }

  /** End the open event streams (at shutdown, so the server can close). */
  close(): void {
    this.closing.abort();
  }
}

function routeGroup(url: string): string {
  const path = url.split("?")[0] ?? "/";
  if (path.startsWith("/v1/runs")) return "/v1/runs";
  if (path.startsWith("/api/sessions")) return "/api/sessions";
  if (path.startsWith("/v1/models/")) return "/v1/models";
  return [
    "/health/live",
    "/health",
    "/metrics",
    "/api/events",
    "/api/capabilities",
    "/v1/models",
    "/v1/chat/completions",
  ].includes(path.replace(/\/+$/, ""))
    ? path.replace(/\/+$/, "")
    : "other";
}
