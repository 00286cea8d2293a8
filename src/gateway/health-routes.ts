// What the gateway's observability routes (routes/health.ts) serve, one model behind all three:
// GET /health (each layer's last checked state and its age; 503 when down), GET /metrics
// (Prometheus text) and GET /api/events (SSE of status events, resumable with Last-Event-ID
// while the ring holds them). It also turns
// every agent and store event into a feed event, and counts responses and finished turns.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AgentEvent, StoreEvent } from "../agent/events.js";
import { type EventHub, type PublishInput, parseLastEventId } from "../health/event-hub.js";
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
  health(): { status: number; body: ReturnType<HealthMonitor["report"]> } {
    const report = this.monitor.report();
    return { status: report.status === "down" ? 503 : 200, body: report };
  }

  /** GET /metrics, in Prometheus text. */
  metrics(): string {
    const g = this.gauges();
    const cron = this.monitor.cronView();
    return renderMetrics(
      this.monitor.report(cron),
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
    const published = feedOf(sessionId, event);
    if (published) this.hub.publish(published);
  }

  onStoreEvent(event: StoreEvent): void {
    if (event.type === "store.busy_retry") return;
    const { type, ...data } = event;
    this.hub.publish({ type, layer: "store", message: describeStoreEvent(event), data });
  }

  /** End the open event streams (at shutdown, so the server can close). */
  close(): void {
    this.closing.abort();
  }
}

function feedOf(sessionId: string, event: AgentEvent): PublishInput | null {
  if (event.type === "turn_started")
    return {
      type: event.type,
      layer: "agent",
      session_id: sessionId,
      message: `turn ${event.turn_id} started`,
      data: { turn_id: event.turn_id },
    };
  if (event.type === "turn_finished")
    return {
      type: event.type,
      layer: "agent",
      session_id: sessionId,
      message: `turn ${event.turn_id} ${event.status}${event.error && event.status !== "completed" ? `: ${event.error}` : ""}`,
      data: { ...event },
    };
  if (!("layer" in event) || typeof event.layer !== "string") return null;
  const data = { ...event } as Record<string, unknown>;
  const message = typeof data.message === "string" ? data.message : summarize(data);
  return { type: event.type, layer: event.layer, session_id: sessionId, message, data };
}

/** One line for an event that carries no message of its own. */
function summarize(data: Record<string, unknown>): string {
  const parts = [String(data.type)];
  for (const key of ["provider", "model", "reason", "attempt", "to", "from", "delay_ms"])
    if (data[key] !== undefined && typeof data[key] !== "object") parts.push(`${key} ${String(data[key])}`);
  return parts.join(", ");
}

function describeStoreEvent(event: StoreEvent): string {
  switch (event.type) {
    case "store.corrupt":
      return `the store is corrupt (${event.detail}); writes are spooled. Recover: ${event.recover}`;
    case "store.spooled":
      return `${event.ops} write(s) spooled to ${event.file}: ${event.reason}`;
    case "store.integrity":
      return `integrity check: ${event.result.status}`;
    case "search.degraded":
      return `search degraded: ${event.detail}`;
    case "search.resumed":
      return `search resumed: ${event.indexed} waiting messages indexed`;
    case "search.rebuilt":
      return `search index rebuilt: ${event.messages} messages in ${event.duration_ms} ms`;
    case "store.disk_failed":
    case "store.busy_retry":
      return event.type;
    default: {
      const unhandled: never = event;
      return unhandled;
    }
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
