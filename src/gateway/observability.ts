// What a gateway process sees of itself, made in one place: the event feed, the background health
// monitor over the one health model, the routes that serve them, the rotating log file that
// every operator line and feed event also goes to, and the audit trail (logs/events.jsonl) that
// every feed event is written to as it is published.
import { join } from "node:path";
import { type AuditTrail, openAuditTrail } from "../agent/audit-trail.js";
import type { Scheduler } from "../agent/scheduler.js";
import type { TenaxConfig } from "../config/schema.js";
import { RotatingLog } from "../core/log-file.js";
import type { Redactor } from "../core/redact.js";
import { EventHub } from "../health/event-hub.js";
import { type LayerProbe, probeLayers, workerProbe } from "../health/layer-probe.js";
import { type GatewayView, HealthMonitor, type MonitorOptions } from "../health/monitor.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { StorePort } from "../store/port.js";
import { HealthRoutes } from "./health-routes.js";

export interface Observability {
  hub: EventHub;
  monitor: HealthMonitor;
  routes: HealthRoutes;
  log: RotatingLog;
  trail: AuditTrail;
  close(): Promise<void>;
}

export function gatewayLog(paths: ProfilePaths, config: TenaxConfig, redactor?: Redactor): RotatingLog {
  return new RotatingLog(join(paths.logs, "gateway.log"), {
    maxBytes: Math.round(config.logs.max_mb * 1024 * 1024),
    keep: config.logs.keep,
    ...(redactor ? { redactor } : {}),
  });
}

/** Feed events the log writes as warnings (besides the store's and every `*_exhausted`). */
const WARNINGS: ReadonlySet<string> = new Set([
  "turn_stalled",
  "turn_deadline",
  "mcp_restart",
  "mcp_timeout",
]);

export function startObservability(input: {
  paths: ProfilePaths;
  config: TenaxConfig;
  /** The profile's store (health's page checks run when it is SQLite's). */
  store: StorePort;
  scheduler: Scheduler;
  log: RotatingLog;
  gateway: () => GatewayView;
  /** The layer probe; by default it runs in a worker thread. */
  layers?: LayerProbe;
  /** The profile's secrets, redacted from every feed event. */
  redactor?: Redactor;
  /** The agent's live view of its providers, and the keys a `models` probe may send. */
  providers?: MonitorOptions["providers"];
  /** The cron engine's numbers once it runs in this gateway (it may start after this). */
  cronStats?: MonitorOptions["cronStats"];
  platformsLive?: MonitorOptions["platformsLive"];
  /** This gateway as an instance of the profile (its registry on PostgreSQL). */
  instances?: MonitorOptions["instances"];
  platformsHolding?: MonitorOptions["platformsHolding"];
  /** The MCP servers this gateway runs (their states), when config names any. */
  mcpLive?: MonitorOptions["mcpLive"];
  /** The clock the monitor reads (the scheduler's: a test runs both on fake time). */
  now?: () => number;
}): Observability {
  const { paths, config, store, scheduler, log } = input;
  const hub = new EventHub({
    maxBufferedBytes: config.gateway.stream_buffer_kb * 1024,
    ...(input.redactor ? { redactor: input.redactor } : {}),
  });
  const probe = input.layers ? null : workerProbe(paths, config);
  const monitor = new HealthMonitor({
    paths,
    config,
    store,
    scheduler,
    gateway: input.gateway,
    hub,
    layers: input.layers ?? (probe as LayerProbe),
    firstLayers: input.layers ?? (() => probeLayers(paths, config, Date.now())),
    intervalMs: config.health.probe_interval * 1000,
    timeoutMs: config.health.probe_timeout * 1000,
    integrityIntervalMs: config.health.integrity_interval * 1000,
    integrityCpuShare: config.health.integrity_cpu_percent / 100,
    ...(input.providers ? { providers: input.providers } : {}),
    ...(input.cronStats ? { cronStats: input.cronStats } : {}),
    ...(input.platformsLive ? { platformsLive: input.platformsLive } : {}),
    ...(input.instances ? { instances: input.instances } : {}),
    ...(input.platformsHolding ? { platformsHolding: input.platformsHolding } : {}),
    ...(input.mcpLive ? { mcpLive: input.mcpLive } : {}),
    ...(input.now ? { now: input.now } : {}),
  });
  const routes = new HealthRoutes(hub, monitor, () => {
    const g = input.gateway();
    return { turns_in_flight: g.turnsInFlight, started_at: g.startedAt };
  });
  // The feed is the gateway's one tap: every event of its turns, its store, cron, the chat
  // platforms and its own lifecycle is published to it, and so written to the trail at once.
  const trail = openAuditTrail(paths, config.logs, {
    source: "gateway",
    ...(input.redactor ? { redactor: input.redactor } : {}),
    onFailure: (message) => log.write("warn", message),
  });
  const offTrail = hub.subscribe((event) => trail.record(event, event.at));
  const offFeed = hub.subscribe((event) => {
    if (event.type === "turn_started") return;
    log.write(
      WARNINGS.has(event.type) || event.layer === "store" || event.type.endsWith("exhausted")
        ? "warn"
        : "info",
      event.message,
      {
        type: event.type,
        layer: event.layer,
        session_id: event.session_id,
      },
    );
  });
  const offStore = store.on((event) => routes.onStoreEvent(event));
  monitor.start();
  return {
    hub,
    monitor,
    routes,
    log,
    trail,
    close: async () => {
      routes.close();
      monitor.close();
      offTrail();
      offFeed();
      offStore();
      await probe?.close();
    },
  };
}
