// Whether this process exports traces, and starting the exporter when it does: on when
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.endpoint in
// config.yaml names a collector (unless telemetry.enabled is false, OTEL_SDK_DISABLED is true or
// OTEL_TRACES_EXPORTER is none). Off, the SDK is never loaded. The standard OTEL_* variables the
// SDK reads (headers, timeout, resource attributes, service name) apply; a key config.yaml sets wins.
import { installTraceSink } from "./trace.js";

/** The `telemetry` section of config.yaml, as the config layer parsed it. */
export interface TelemetrySettings {
  enabled?: boolean | undefined;
  /** The collector's OTLP/HTTP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT); `/v1/traces` is added. */
  endpoint?: string | undefined;
  headers?: Readonly<Record<string, string>> | undefined;
  service_name?: string | undefined;
}

export interface TelemetryCounts {
  /** Spans the collector accepted. */
  exported: number;
  /** Spans lost: the queue was full, an export failed, or the process stopped before they left. */
  dropped: number;
  failed_exports: number;
}

export interface Tracing {
  /** Where traces go, for the start line: the URL, or the variable that names it. */
  readonly where: string;
  counts(): TelemetryCounts;
  /** Flush what is queued, waiting at most `timeoutMs`; false when the wait ran out. */
  shutdown(timeoutMs?: number): Promise<boolean>;
}

/** What the adapter is built from (core/trace-otel.ts). */
export interface TracingOptions {
  /** The traces URL when config.yaml names it; null lets the exporter read OTEL_* itself. */
  url: string | null;
  headers: Readonly<Record<string, string>> | null;
  serviceName: string | null;
  version: string;
  where: string;
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduleDelayMs: number;
  exportTimeoutMs: number;
  report(line: string): void;
}

/** How long a stopping process waits for its last spans to leave. */
export const TRACE_SHUTDOWN_MS = 3000;

type Env = Readonly<Record<string, string | undefined>>;

/** Where traces would go, or null when this process exports none. */
export function tracesDestination(settings: TelemetrySettings | undefined, env: Env): string | null {
  if (settings?.enabled === false) return null;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return null;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return null;
  if (settings?.endpoint !== undefined) return tracesUrl(settings.endpoint);
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return specific;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? tracesUrl(base) : null;
}

/** The signal path the OTLP/HTTP spec adds to a base endpoint. */
export function tracesUrl(base: string): string {
  return `${base.replace(/\/+$/, "")}/v1/traces`;
}

/**
 * Start exporting traces when the config or the environment says so, and make every span of this
 * process go there; null (nothing loaded, every span a no-op) otherwise.
 */
export async function startTracing(
  settings: TelemetrySettings | undefined,
  options: { version: string; report(line: string): void; env?: Env },
): Promise<Tracing | null> {
  const env = options.env ?? process.env;
  const where = tracesDestination(settings, env);
  if (where === null) return null;
  // Loaded here and only here, so a process with telemetry off never loads the SDK.
  const { createOtelTracing } = await import("./trace-otel.js");
  let reporting = true;
  const otel = createOtelTracing({
    url: settings?.endpoint === undefined ? null : where,
    headers: settings?.headers ?? null,
    serviceName: settings?.service_name ?? null,
    version: options.version,
    where,
    maxQueueSize: envInt(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
    maxExportBatchSize: envInt(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
    scheduleDelayMs: envInt(env, "OTEL_BSP_SCHEDULE_DELAY", 2000),
    exportTimeoutMs: envInt(
      env,
      "OTEL_BSP_EXPORT_TIMEOUT",
      envInt(env, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000),
    ),
    // Past the stop, its log is closed and the stop line has counted what was lost.
    report: (line) => {
      if (reporting) options.report(line);
    },
  });
  installTraceSink(otel.sink);
  return {
    where,
    counts: () => otel.counts(),
    async shutdown(timeoutMs = TRACE_SHUTDOWN_MS) {
      installTraceSink(null);
      const flushed = await otel.shutdown(timeoutMs);
      reporting = false;
      return flushed;
    },
  };
}

/** A positive integer from the environment, the default when unset or not one. */
function envInt(env: Env, name: string, otherwise: number): number {
  const raw = env[name]?.trim();
  if (!raw) return otherwise;
  const value = Number(raw);
  return Number.isInteger(value) && value > 0 ? value : otherwise;
}
