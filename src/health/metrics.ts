// GET /metrics: the gateway's state in the Prometheus text format (version 0.0.4). Gauges for each
// layer's status and the figures behind it, counters for requests, turns and status events.

import type { McpServerState } from "../agent/mcp/mcp-types.js";
import { bufferedSseBytes, droppedSseClients, openSseStreams } from "../core/sse.js";
import type { ProviderCounters } from "../llm/provider-health.js";
import { type CronMetricsInput, cronMetrics } from "./cron-metrics.js";
import type { InstancesComponent } from "./instances-component.js";
import type { McpComponent } from "./mcp-component.js";
import type { HealthReport } from "./monitor.js";
import type { PlatformRow, PlatformsComponent } from "./platforms-component.js";
import type { ComponentLevel } from "./status.js";

export interface Counters {
  /** HTTP responses by route group and status code. */
  http: Map<string, number>;
  /** Turns finished by status. */
  turns: Map<string, number>;
  /** The store's events by type (STORE_EVENT_COUNTERS name those /metrics counts). */
  store: Map<string, number>;
}

export function newCounters(): Counters {
  return { http: new Map(), turns: new Map(), store: new Map() };
}

/**
 * Counters fed by the store's events, by the event's type: a turn taken over from an instance gone,
 * and a write refused because its lease had passed to another instance (fencing).
 */
export const STORE_EVENT_COUNTERS = [
  ["tenax_takeovers_total", "turn_takeover", "Turns this gateway took over from an instance gone."],
  [
    "tenax_fenced_writes_total",
    "lease_lost",
    "Writes of this gateway refused because another instance had taken the lease (fencing).",
  ],
] as const;

export function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

// -1 for a layer nobody has seen work or fail yet (a provider never called nor probed).
const LEVEL_VALUE: Record<ComponentLevel, number> = { unknown: -1, ok: 0, degraded: 1, down: 2 };

export function renderMetrics(
  report: HealthReport,
  counters: Counters,
  events: { layer: string; type: string; count: number }[],
  gauges: { turns_in_flight: number; event_clients: number; started_at: number },
  providers: ProviderCounters | null = null,
  cron: CronMetricsInput | null = null,
): string {
  const out: string[] = [];
  const metric = (
    name: string,
    type: "gauge" | "counter",
    help: string,
    rows: [Record<string, string>, number][],
  ) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of rows)
      out.push(`${name}${labelText(labels)} ${Number.isFinite(value) ? value : 0}`);
  };
  metric("tenax_up", "gauge", "1 while the gateway serves HTTP.", [[{}, 1]]);
  metric("tenax_start_time_seconds", "gauge", "When this gateway process started (Unix time).", [
    [{}, gauges.started_at / 1000],
  ]);
  metric("tenax_health_status", "gauge", "Overall health: 0 ok, 1 degraded, 2 down.", [
    [{}, LEVEL_VALUE[report.status]],
  ]);
  const components = Object.entries(report.components);
  metric(
    "tenax_component_status",
    "gauge",
    "Each layer's health: 0 ok, 1 degraded, 2 down, -1 unknown.",
    components.map(([name, c]) => [{ component: name }, LEVEL_VALUE[c.status]]),
  );
  metric(
    "tenax_component_check_age_seconds",
    "gauge",
    "How old each layer's last check is.",
    components
      .filter(([, c]) => c.age_ms !== null)
      .map(([name, c]) => [{ component: name }, (c.age_ms ?? 0) / 1000]),
  );
  metric("tenax_turns_in_flight", "gauge", "Agent turns running now.", [[{}, gauges.turns_in_flight]]);
  metric(
    "tenax_turns_total",
    "counter",
    "Agent turns finished, by status.",
    [...counters.turns].map(([status, n]) => [{ status }, n]),
  );
  metric(
    "tenax_http_responses_total",
    "counter",
    "HTTP responses, by route and status code.",
    [...counters.http].map(([key, n]) => {
      const [route = "", code = ""] = key.split(" ");
      return [{ route, code }, n];
    }),
  );
  metric(
    "tenax_events_total",
    "counter",
    "Status events published on /api/events, by layer and type.",
    events.map((e) => [{ layer: e.layer, type: e.type }, e.count]),
  );
  metric("tenax_event_clients", "gauge", "Clients following /api/events.", [[{}, gauges.event_clients]]);
  metric(
    "tenax_sse_clients_dropped_total",
    "counter",
    "Streaming clients dropped for not reading (past the per-client buffer bound), by stream.",
    droppedSseClients().map((d) => [{ stream: d.stream }, d.count]),
  );
  metric("tenax_sse_streams", "gauge", "Streaming (SSE) clients connected now, of every kind.", [
    [{}, openSseStreams()],
  ]);
  metric(
    "tenax_sse_buffered_bytes",
    "gauge",
    "Bytes held unsent for every streaming client together (each is dropped past gateway.stream_buffer_kb).",
    [[{}, bufferedSseBytes()]],
  );
  const c = report.components;
  const num = (name: string, key: string) => {
    const v = c[name]?.[key];
    return typeof v === "number" ? v : null;
  };
  const optional: [string, string, string, number | null][] = [
    [
      "tenax_scheduler_lag_seconds",
      "How late the scheduler last woke.",
      "scheduler",
      scale(num("scheduler", "lag_ms")),
    ],
    [
      "tenax_scheduler_max_lag_seconds",
      "The scheduler's worst lateness in the last minute.",
      "scheduler",
      scale(num("scheduler", "max_lag_ms")),
    ],
    [
      "tenax_store_spooled_writes",
      "Writes waiting in the spool for the store.",
      "store",
      num("store", "spooled_records"),
    ],
    ["tenax_disk_free_bytes", "Free space where the profile lives.", "disk", num("disk", "free_bytes")],
    ["tenax_store_bytes", "Size of the store (with its WAL).", "disk", num("disk", "store_bytes")],
    ["tenax_log_bytes", "Size of the profile's logs.", "disk", num("disk", "log_bytes")],
  ];
  for (const [name, help, , value] of optional)
    if (value !== null) metric(name, "gauge", help, [[{}, value]]);
  const creds = c.credentials?.providers;
  if (Array.isArray(creds)) {
    const rows: [Record<string, string>, number][] = [];
    for (const p of creds as { provider: string; keys: { status: string }[] }[]) {
      const by = new Map<string, number>();
      for (const k of p.keys) by.set(k.status, (by.get(k.status) ?? 0) + 1);
      for (const [state, n] of by) rows.push([{ provider: p.provider, state }, n]);
    }
    metric("tenax_credential_keys", "gauge", "Provider keys by state (ok, cooling, disabled).", rows);
  }
  providerMetrics(metric, c.providers?.providers, providers);
  circuitMetrics(metric, c.providers?.models);
  if (cron !== null) cronMetrics(metric, cron);
  platformMetrics(metric, (report.components.platforms as PlatformsComponent | undefined)?.platforms ?? []);
  mcpMetrics(metric, (report.components.mcp as McpComponent | undefined)?.servers ?? []);
  instanceMetrics(metric, report.components.instances as InstancesComponent | undefined, counters.store);
  return `${out.join("\n")}\n`;
}

type Emit = (
  name: string,
  type: "gauge" | "counter",
  help: string,
  rows: [Record<string, string>, number][],
) => void;

const CIRCUIT_VALUE: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

/** Each model's circuit breaker, as /health lists it (components.providers.models). */
function circuitMetrics(metric: Emit, list: unknown): void {
  if (!Array.isArray(list)) return;
  const models = list as { provider: string; model: string; circuit: string }[];
  metric(
    "tenax_model_circuit",
    "gauge",
    "Each model's circuit breaker: 0 closed, 1 half_open (one probe call goes next), 2 open (calls skip it).",
    models.map((m) => [{ provider: m.provider, model: m.model }, CIRCUIT_VALUE[m.circuit] ?? -1]),
  );
}

/** Each provider's state as /health judges it, and this process's calls and probes of it. */
function providerMetrics(metric: Emit, list: unknown, counters: ProviderCounters | null): void {
  if (Array.isArray(list)) {
    const providers = list as {
      provider: string;
      status: ComponentLevel;
      last_error: { at: number } | null;
    }[];
    metric(
      "tenax_provider_status",
      "gauge",
      "Each provider's health: 0 ok, 1 degraded (a fallback answers), 2 down (no model of the chain answers), -1 unknown (never seen answering).",
      providers.map((p) => [{ provider: p.provider }, LEVEL_VALUE[p.status] ?? -1]),
    );
    metric(
      "tenax_provider_last_failure_timestamp_seconds",
      "gauge",
      "When the failure each failing provider is judged by happened (Unix time).",
      providers.flatMap((p) => (p.last_error ? [[{ provider: p.provider }, p.last_error.at / 1000]] : [])),
    );
  }
  if (counters === null) return;
  metric(
    "tenax_provider_calls_total",
    "counter",
    "Model calls this gateway made, by provider and outcome (after keys and retries).",
    [...counters.calls.values()].map((r) => [{ provider: r.provider, outcome: r.outcome }, r.count]),
  );
  metric(
    "tenax_provider_call_failures_total",
    "counter",
    "Failed model calls, by provider and classified reason.",
    [...counters.failures.values()].map((r) => [{ provider: r.provider, reason: r.reason }, r.count]),
  );
  metric(
    "tenax_provider_probes_total",
    "counter",
    "Background looks at providers (health.provider_probe), by provider and outcome.",
    [...counters.probes.values()].map((r) => [{ provider: r.provider, outcome: r.outcome }, r.count]),
  );
}

function scale(ms: number | null): number | null {
  return ms === null ? null : ms / 1000;
}

function labelText(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`,
  );
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

type Metric = (
  name: string,
  type: "gauge" | "counter",
  help: string,
  rows: [Record<string, string>, number][],
) => void;

/** Per chat platform: the connection, the last update, and what waits in the outbox. */
/** Each MCP server the gateway runs: up or not, its tools, and its calls, errors, timeouts and restarts. */
function mcpMetrics(metric: Metric, rows: readonly McpServerState[]): void {
  if (rows.length === 0) return;
  const each = (value: (r: McpServerState) => number) =>
    rows.map((r): [Record<string, string>, number] => [{ server: r.server }, value(r)]);
  metric(
    "tenax_mcp_server_up",
    "gauge",
    "1 while the MCP server is ready, 0 when not.",
    each((r) => (r.status === "ready" ? 1 : 0)),
  );
  metric(
    "tenax_mcp_tools",
    "gauge",
    "Tools the model is shown for the MCP server.",
    each((r) => r.tools),
  );
  metric(
    "tenax_mcp_calls_total",
    "counter",
    "Tool calls sent to the MCP server.",
    each((r) => r.calls),
  );
  metric(
    "tenax_mcp_errors_total",
    "counter",
    "MCP tool calls that failed (timeouts included).",
    each((r) => r.errors),
  );
  metric(
    "tenax_mcp_timeouts_total",
    "counter",
    "MCP tool calls given up at the server's timeout.",
    each((r) => r.timeouts),
  );
  metric(
    "tenax_mcp_restarts_total",
    "counter",
    "Times the MCP server was lost after being ready.",
    each((r) => r.restarts),
  );
}

function platformMetrics(metric: Metric, rows: readonly PlatformRow[]): void {
  if (rows.length === 0) return;
  const each = (value: (r: PlatformRow) => number | null) =>
    rows.flatMap((r): [Record<string, string>, number][] => {
      const v = value(r);
      return v === null ? [] : [[{ platform: r.platform }, v]];
    });
  metric(
    "tenax_platform_connected",
    "gauge",
    "1 while the gateway is connected to the chat platform, 0 when not.",
    each((r) => (r.connected === null ? null : r.connected ? 1 : 0)),
  );
  metric(
    "tenax_platform_last_update_timestamp_seconds",
    "gauge",
    "When the platform's last update arrived (Unix time).",
    each((r) => (r.last_update_at === null ? null : r.last_update_at / 1000)),
  );
  metric(
    "tenax_platform_outbox_pending",
    "gauge",
    "Messages waiting in the platform's outbox.",
    each((r) => r.pending),
  );
  metric(
    "tenax_platform_outbox_given_up",
    "gauge",
    "Messages given up in the last 24 hours.",
    each((r) => r.given_up),
  );
  metric(
    "tenax_platform_outbox_oldest_pending_seconds",
    "gauge",
    "How long the oldest waiting message has waited.",
    each((r) => (r.oldest_pending_age_ms ?? 0) / 1000),
  );
}

/** The profile's instances, this process's clock against the database's, takeovers and fenced writes. */
function instanceMetrics(
  metric: Metric,
  component: InstancesComponent | undefined,
  storeEvents: ReadonlyMap<string, number>,
): void {
  if (component !== undefined) {
    if (component.skew_ms !== null)
      metric(
        "tenax_instance_clock_skew_seconds",
        "gauge",
        "This gateway's clock minus the database's, measured at its heartbeat (0 on SQLite).",
        [[{}, component.skew_ms / 1000]],
      );
    metric("tenax_instances", "gauge", "The profile's instances by state (on SQLite, this gateway alone).", [
      [{ state: "alive" }, component.alive],
      [{ state: "gone" }, component.gone],
    ]);
  }
  for (const [name, type, help] of STORE_EVENT_COUNTERS)
    metric(name, "counter", help, [[{}, storeEvents.get(type) ?? 0]]);
}
